//! The check catalog: every family's checks gathered in one ordered list,
//! the single source for the report's check order, `meshcheck checks`,
//! docs/checks.md, the README's table, the schemas' ID lists, the demo
//! page's labels and `--only`/`--skip`.
//!
//! Nothing here defines a check: each is written once, beside its
//! function, in its family file. The catalog lists the families, sorts
//! their checks by ID (the order the report lists results in), and hands
//! the profiles what they are checked against (every parameter and ID).

use super::{CheckDef, Ctx, Family, Split, WELD_TOLERANCE, anm, geo, mat, perf, rnd, spec, top, uv, xfm};
use crate::error::Result;
use crate::profile::{BUILTIN_NAMES, Param, Profile, Schema};
use std::sync::LazyLock;

/// The families, in the order docs and report cards present them.
pub static FAMILIES: &[&Family] = &[
    &spec::FAMILY,
    &geo::FAMILY,
    &xfm::FAMILY,
    &uv::FAMILY,
    &mat::FAMILY,
    &perf::FAMILY,
    &anm::FAMILY,
    &rnd::FAMILY,
    &top::FAMILY,
];

/// Every check, sorted by ID.
pub static CATALOG: LazyLock<Vec<&'static CheckDef>> = LazyLock::new(|| {
    let mut all: Vec<&'static CheckDef> = FAMILIES.iter().flat_map(|f| f.checks.iter()).collect();
    all.sort_by_key(|c| c.id);
    all
});

/// Builds, once, what several checks share, before the engine runs them
/// side by side: the welded world mesh and its degenerate-triangle flags,
/// when a selected GEO or TOP check reads them. (A check that found them
/// half-built on a thread-pool thread could wait on itself.) A mesh over
/// the file's geometry budget is not built; its checks then skip, as before.
///
/// Then, side by side, the mesh's two longest passes: when both TOP-001
/// and TOP-004 are selected, what each reads of the manifold edges, from
/// one walk ([`top::prepare_pairs`]), and GEO-008's non-manifold vertices
/// (the mesh keeps both for the checks). The fan walks' tables (8 bytes a
/// vertex) are then held while TOP-001's candidates are found, not beside
/// its pairing, which holds them and 4 bytes a triangle more: as GEO-008
/// ran when it started beside TOP-001 (s13's peak, BENCHMARKS.md,
/// "Thirty-third step").
pub fn prepare(cx: &Ctx<'_>, selected: &dyn Fn(&CheckDef) -> bool) {
    if CATALOG.iter().any(|def| reads_world(def) && selected(def))
        && let Ok(w) = geo::world(cx)
    {
        geo::degenerate_flags(w, &cx.asset.scene, cx.profile.get(&WELD_TOLERANCE));
        let pairs = selected(&top::QUAD_RECONSTRUCTIBILITY) && selected(&top::HARD_EDGES);
        let fans = selected(&geo::NON_MANIFOLD);
        rayon::join(
            || {
                if pairs {
                    top::prepare_pairs(cx, w);
                }
            },
            || {
                if fans {
                    w.topology.non_manifold_vertices();
                }
            },
        );
    }
}

/// Whether a check reads what [`prepare`] builds: the GEO and TOP checks.
/// The others never touch it, so they may run while it is being built.
pub fn reads_world(def: &CheckDef) -> bool {
    geo::FAMILY.checks.iter().chain(top::FAMILY.checks).any(|c| c.id == def.id)
}

/// Whether a check holds working arrays the size of the mesh while it
/// runs: of those that read the world mesh, quad candidates and
/// per-triangle qualities (TOP-001, TOP-003); of the others, UV rasters,
/// islands and per-triangle samples (UV-002, UV-004, UV-005, UV-008). On a
/// large mesh the engine runs each phase's hungry checks one at a time,
/// beside the others, so that their arrays are not held at once. UV-008's
/// samples take 20 bytes a triangle, as UV-004's do: left to the pool, it
/// ran beside UV-004 in most runs of a 1.3M-triangle textured sphere (36.5
/// MB), whose peak then spread over 96-114 MB, past three times the file;
/// chained, 96-98 MB at the same wall time (BENCHMARKS.md, "Nineteenth
/// step").
pub fn memory_hungry(def: &CheckDef) -> bool {
    [
        &top::QUAD_RECONSTRUCTIBILITY,
        &top::TRIANGLE_REGULARITY,
        &uv::OVERLAP,
        &uv::STRETCH,
        &uv::PADDING,
        &uv::TEXEL_DENSITY,
    ]
    .iter()
    .any(|c| c.id == def.id)
}

/// Whether a check that is not [`memory_hungry`] still holds a table the
/// size of the mesh's vertices: PERF-006 (its duplicate-vertex table, 2.7
/// to 5.3 bytes a vertex, and a byte a vertex twice more) in the first
/// phase, GEO-008 (a triangle count and a first triangle a vertex, 8
/// bytes) in the second. On a large mesh the engine runs it first beside
/// the chain, while the chain's first check runs, not wherever the pool
/// reaches it. In the first phase that check is UV-002, whose raster and
/// spans are small beside the mesh: PERF-006 left to the pool met the end
/// of UV-005 (the phase's peak) in one run in ten on two cores with Node
/// validating beside, and raised the peak of a 32 MB GLB by 5-8 MB. In the
/// second it is TOP-001 while it finds its candidates: GEO-008 left to the
/// pool met TOP-001's pairing (its candidates and pointers all held, the
/// phase's peak) in most runs; first, the 32 MB sphere's second phase
/// peaked at 67-68 MiB in eight runs, not 68-71 (BENCHMARKS.md,
/// "Nineteenth step"). Where [`prepare`] runs, it now finds GEO-008's
/// vertices (the tables' pass) beside TOP-001's candidates, and the check
/// itself reads them: it still starts first, where the pool would
/// otherwise leave it to the end.
pub fn runs_first(def: &CheckDef) -> bool {
    def.id == perf::VERTEX_FETCH.id || def.id == geo::NON_MANIFOLD.id
}

/// The check's function in two steps, for a check whose last step can run
/// beside what follows it ([`super::Tail`]): UV-004 and UV-008, each of
/// whose last steps is a weighted quantile over a sample a triangle, on one
/// thread (8-9 ms each on s13), while the other core has nothing to run.
/// On a large mesh the engine runs UV-004's beside the next check of the
/// chain (UV-005 hashes its UV points on one thread first) and UV-008's
/// beside the world mesh's build. Their samples are then held beside the
/// next step's start, not its peak (BENCHMARKS.md, "Thirtieth step").
/// `None` for every other check; for these two, `run` is the same two
/// steps in turn.
pub fn split_run(def: &CheckDef) -> Option<fn(&Ctx<'_>) -> Split> {
    if def.id == uv::STRETCH.id {
        Some(uv::stretch_split)
    } else if def.id == uv::TEXEL_DENSITY.id {
        Some(uv::texel_density_split)
    } else {
        None
    }
}

/// Whether a check reads a primitive's normals, tangents or colours (the
/// vertex streams besides positions and UVs): PERF-006, which counts
/// distinct vertices over every stream. No other check reads them, so on a
/// large mesh whose asset it owns the engine frees them once the first
/// phase's head has run (the checks listed here, the other light checks and
/// UV-002), before UV-004 and UV-005 (the first phase's peak).
pub fn reads_vertex_streams(def: &CheckDef) -> bool {
    def.id == perf::VERTEX_FETCH.id
}

/// What a profile is checked against: every parameter some check reads (in
/// catalog order, each once) and every check ID.
pub fn schema() -> &'static Schema {
    static SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
        let mut params: Vec<&'static Param> = Vec::new();
        for c in CATALOG.iter() {
            for p in c.params {
                if !params.iter().any(|q| q.key == p.key) {
                    params.push(p);
                }
            }
        }
        Schema { params, checks: ids() }
    });
    &SCHEMA
}

/// A built-in profile name or a profile file, checked against the catalog.
pub fn profile(name_or_path: &str) -> Result<Profile> {
    Profile::load(name_or_path, schema())
}

/// The default profile (`web`).
pub fn default_profile() -> Profile {
    builtin_profiles().swap_remove(0)
}

/// The built-in profiles, default first.
pub fn builtin_profiles() -> Vec<Profile> {
    BUILTIN_NAMES
        .iter()
        .map(|n| Profile::builtin(n, schema()).expect("the built-in profiles match the catalog"))
        .collect()
}

/// The check with this ID.
pub fn find(id: &str) -> Option<&'static CheckDef> {
    CATALOG.iter().copied().find(|c| c.id == id)
}

/// Every ID, in catalog order.
pub fn ids() -> Vec<&'static str> {
    CATALOG.iter().map(|c| c.id).collect()
}

/// The family a check belongs to.
pub fn family_of(check: &CheckDef) -> &'static Family {
    FAMILIES.iter().copied().find(|f| f.checks.iter().any(|c| c.id == check.id)).expect("every check is in a family")
}

/// The IDs a selector names: a check ID, a family prefix (`PERF`) or a
/// category name (`performance`), case-insensitive.
pub fn select(selector: &str) -> Option<Vec<&'static str>> {
    let s = selector.trim().to_ascii_uppercase();
    if let Some(c) = find(&s) {
        return Some(vec![c.id]);
    }
    let family = FAMILIES.iter().find(|f| f.prefix == s || f.category.eq_ignore_ascii_case(selector.trim()))?;
    let ids: Vec<_> = family.checks.iter().map(|c| c.id).collect();
    if ids.is_empty() { None } else { Some(ids) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Severity;

    #[test]
    fn catalog_rules() {
        let mut prev = "";
        for c in CATALOG.iter() {
            assert!(c.id > prev, "{} is out of order", c.id);
            prev = c.id;
            let (fam, num) = c.id.split_once('-').expect("FAMILY-NNN");
            assert!(num.len() == 3 && num.bytes().all(|b| b.is_ascii_digit()), "{}", c.id);
            let family = family_of(c);
            assert_eq!(family.prefix, fam, "{} is in the {} family", c.id, family.prefix);
            assert_eq!(family.category, c.category, "{} category", c.id);
            for p in c.params {
                assert!(c.threshold.iter().any(|(k, _)| *k == p.key), "{} echoes {} in threshold", c.id, p.key);
            }
            if let Some((m, t)) = c.gauge {
                assert!(c.measured.iter().any(|(k, _)| *k == m), "{} gauge {m}", c.id);
                assert!(c.params.iter().any(|p| p.key == t), "{} gauge {t}", c.id);
            }
            if fam == "TOP" {
                assert_eq!(c.severity, Severity::Info);
            }
            assert!(!c.what.is_empty() && !c.why.is_empty() && !c.fix.is_empty() && !c.measured.is_empty());
        }
        for f in FAMILIES {
            assert!(f.checks.windows(2).all(|w| w[0].id < w[1].id), "{} lists its checks in ID order", f.prefix);
        }
    }

    #[test]
    fn every_builtin_profile_sets_every_parameter_in_one_order() {
        let profiles = builtin_profiles();
        let order = |p: &Profile| p.values().map(|(q, _)| q.key).collect::<Vec<_>>();
        for p in &profiles {
            assert_eq!(order(p), order(&profiles[0]), "{} lists the parameters as web does", p.name);
            assert_eq!(order(p).len(), schema().params.len());
            for (_, v) in p.values() {
                assert!(v.is_finite());
            }
        }
        assert_eq!(profiles[0].name, "web");
        assert_eq!(profiles[0].get(&perf::MAX_TRIS), 100_000.0);
        assert_eq!(profiles[0].get(&mat::MAX_TEXTURE_MEM), 67_108_864.0);
        assert_eq!(profiles[1].get(&spec::MAX_FILE_BYTES), 3_145_728.0);
        assert_eq!(profiles[3].get(&mat::MAX_TEXTURE_DIM), 8192.0);
        assert_eq!(profiles[2].get(&perf::MAX_DRAW_CALLS), 100.0);
    }

    #[test]
    fn custom_profile_extends_a_builtin() {
        let p = Profile::from_toml(
            "name = \"mine\"\nextends = \"pc\"\n[thresholds]\nmax_tris = 7\n[severity]\n\"MAT-004\" = \"error\"\n",
            "mine.toml",
            schema(),
        )
        .unwrap();
        assert_eq!(p.name, "mine");
        assert_eq!(p.get(&perf::MAX_TRIS), 7.0);
        assert_eq!(p.get(&perf::MAX_VERTS), 250_000.0);
        assert_eq!(p.severity_of("MAT-004", Severity::Warning), Severity::Error);
        assert!(Profile::from_toml("[thresholds]\nbogus = 1\n", "x.toml", schema()).is_err());
        let mut web = default_profile();
        assert!(web.apply_override_str("weld_tolerance=1").is_err());
        assert_eq!(web.override_keys().len(), 9, "the specification's nine override keys");
    }

    #[test]
    fn selectors() {
        assert_eq!(
            select("perf").unwrap(),
            vec!["PERF-001", "PERF-002", "PERF-003", "PERF-004", "PERF-005", "PERF-006", "PERF-007"]
        );
        assert_eq!(select("performance").unwrap().len(), 7);
        assert_eq!(select("uv-001").unwrap(), vec!["UV-001"]);
        assert!(select("GEO-999").is_none());
        assert!(select("nonsense").is_none());
    }
}
