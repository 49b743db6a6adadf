//! The check catalog: one ordered table, the single source for the report's
//! check order, `meshcheck checks`, docs/checks.md and `--only`/`--skip`.
//!
//! Rows are sorted by check ID (a test enforces it), which is the order the
//! report lists results in.

use super::{CheckOutput, Ctx, geo, mat, perf, rnd, spec, top, uv, xfm};
use crate::report::Severity;

/// One check's definition.
pub struct CheckDef {
    /// ID of the form FAMILY-NNN.
    pub id: &'static str,
    /// Human name.
    pub name: &'static str,
    /// Family name in lower case (`geometry`, `performance`, ...).
    pub category: &'static str,
    /// Default severity (a custom profile may change it).
    pub severity: Severity,
    /// Profile parameters it compares against.
    pub params: &'static [&'static str],
    /// What it measures and how.
    pub what: &'static str,
    /// Why it matters.
    pub why: &'static str,
    /// How to fix a breach.
    pub fix: &'static str,
    /// `measured` keys and their meaning.
    pub measured: &'static [(&'static str, &'static str)],
    /// `threshold` keys and their meaning.
    pub threshold: &'static [(&'static str, &'static str)],
    /// The measuring function.
    pub run: fn(&Ctx<'_>) -> CheckOutput,
}

/// Families: ID prefix and category name.
pub const FAMILIES: &[(&str, &str)] = &[
    ("SPEC", "spec"),
    ("GEO", "geometry"),
    ("XFM", "transform"),
    ("UV", "uv"),
    ("MAT", "material"),
    ("PERF", "performance"),
    ("RND", "render"),
    ("TOP", "topology"),
];

const LOC: (&str, &str) = ("locations", "JSON pointers to the objects involved (at most 100)");
const LOC_TOTAL: (&str, &str) = ("locations_total", "how many objects are involved in all");

/// Every check, sorted by ID.
pub static CATALOG: &[CheckDef] = &[
    CheckDef {
        id: "GEO-002",
        name: "Open boundaries (holes)",
        category: "geometry",
        severity: Severity::Warning,
        params: &["max_boundary_edges", "weld_tolerance"],
        what: "Welds every drawn vertex in world space (positions within weld_tolerance are one vertex, transitively; UVs and normals are ignored, so UV seams and hard-normal splits are not holes), then counts edges used by exactly one triangle (boundary edges), their loops, edges used by three or more (non-manifold), and the edge-connected shells that have a boundary. Collapsed triangles (a repeated index after welding) are left out.",
        why: "Holes show as see-through gaps and break watertight uses: 3D printing, physics, booleans, shadow volumes and remeshing.",
        fix: "Fill the holes or cap the openings; merge by distance (Blender: Mesh > Clean Up > Merge by Distance) when the gaps are unwelded seams wider than the tolerance. Open surfaces by design (planes, cloth, leaves) can be accepted with a profile that raises max_boundary_edges.",
        measured: &[
            ("boundary_edges", "welded edges used by exactly one triangle"),
            ("boundary_loops", "connected chains of boundary edges (a hole, or an open border)"),
            ("non_manifold_edges", "welded edges used by three or more triangles"),
            ("shells", "edge-connected components of the welded mesh"),
            ("open_shells", "shells with at least one boundary edge"),
            ("weld_exact", "false only when pathological density made the weld merge whole tolerance-wide cells"),
            LOC,
            LOC_TOTAL,
        ],
        threshold: &[("max_boundary_edges", "boundary edges allowed"), ("weld_tolerance", "weld tolerance, metres")],
        run: geo::open_boundaries,
    },
    CheckDef {
        id: "GEO-003",
        name: "Inconsistent winding / flipped normals",
        category: "geometry",
        severity: Severity::Error,
        params: &["flipped_pct"],
        what: "Within each shell of the welded mesh, propagates orientation across manifold edges (two triangles agree when they walk their shared edge in opposite directions); a triangle is flipped when its orientation is opposite to its shell's majority (where non-manifold edges split a shell into manifold patches whose windings cannot be compared, the majority of its patch). Mirrored instances (negative determinant) flip their winding first, as glTF requires. Fails above flipped_pct; warns in the band 0 < flipped_pct <= threshold.",
        why: "Flipped triangles are culled from the wrong side and light inside-out: holes and black patches in viewers that cull back faces.",
        fix: "Recalculate normals outside (Blender: Mesh > Normals > Recalculate Outside) or flip the listed primitives' faces.",
        measured: &[
            ("face_count", "triangles in the welded mesh (collapsed ones excluded)"),
            ("flipped_face_count", "triangles whose winding disagrees with their shell's majority"),
            ("flipped_pct", "flipped_face_count / face_count x 100, 0..50"),
            LOC,
            LOC_TOTAL,
        ],
        threshold: &[("flipped_pct", "percentage above which the check fails (warns from just above 0)")],
        run: geo::winding,
    },
    CheckDef {
        id: "GEO-004",
        name: "Degenerate triangles",
        category: "geometry",
        severity: Severity::Warning,
        params: &["max_degenerate_pct", "weld_tolerance"],
        what: "Counts drawn triangles (per instance, in world space) with a repeated vertex index, an area below weld_tolerance squared, or a shortest altitude below weld_tolerance (collinear corners).",
        why: "Degenerate triangles render nothing but cost vertex work, break normal and tangent generation (NaNs), and trip physics and remeshing tools.",
        fix: "Remove them (Blender: Mesh > Clean Up > Degenerate Dissolve; glTF-Transform weld and dedup).",
        measured: &[
            ("degenerate_triangles", "degenerate triangles drawn"),
            ("triangles", "triangles drawn"),
            ("degenerate_pct", "degenerate_triangles / triangles x 100"),
            LOC,
            LOC_TOTAL,
        ],
        threshold: &[
            ("max_degenerate_pct", "percentage allowed"),
            ("weld_tolerance", "metres: the area and altitude floor"),
        ],
        run: geo::degenerate_triangles,
    },
    CheckDef {
        id: "GEO-007",
        name: "Floating debris",
        category: "geometry",
        severity: Severity::Warning,
        params: &["max_debris_shells", "debris_max_tri_pct", "debris_min_gap_pct"],
        what: "Among the shells of the welded mesh, a shell is debris when it holds at most debris_max_tri_pct % of the triangles and its bounding box is at least debris_min_gap_pct % of the scene diagonal away from the main shell's box (the main shell has the most triangles).",
        why: "Stray fragments left by modelling or scanning inflate bounds (breaking framing, scale and origin checks) and render as specks in mid-air.",
        fix: "Select linked geometry and delete the fragments (Blender: Select > Select Loose; MeshLab: Remove Isolated Pieces).",
        measured: &[
            ("shells", "edge-connected components of the welded mesh"),
            ("debris_shells", "shells that are small and separated from the main shell"),
            ("debris_triangles", "triangles in debris shells"),
            LOC,
            LOC_TOTAL,
        ],
        threshold: &[
            ("max_debris_shells", "debris shells allowed"),
            ("debris_max_tri_pct", "largest shell, % of triangles, that can be debris"),
            ("debris_min_gap_pct", "smallest box gap from the main shell, % of the scene diagonal"),
        ],
        run: geo::floating_debris,
    },
    CheckDef {
        id: "MAT-001",
        name: "Texture resolution",
        category: "material",
        severity: Severity::Error,
        params: &["max_texture_dim"],
        what: "Reads the header (never the pixels) of every image that a material drawn in the default scene uses, preferring a KTX2 (KHR_texture_basisu) or WebP (EXT_texture_webp) source over the fallback, and compares the longest side with the budget.",
        why: "Textures beyond a platform's maximum are downscaled or refused at load time, and large maps dominate download size and GPU memory.",
        fix: "Resize the named images to the budget (power-of-two sides are kindest to mipmapping), or choose a profile meant for the target hardware.",
        measured: &[
            ("images", "images measured (used by drawn materials, each once)"),
            ("max_dimension_px", "the longest side of any measured image, in pixels"),
            ("over_budget", "images with a side over max_texture_dim"),
            ("non_power_of_two", "images with a side that is not a power of two"),
            ("unreadable", "used images whose header could not be read (missing or not an image)"),
            ("textures", "per image (at most 100, largest first): pointer, width, height, format"),
        ],
        threshold: &[("max_texture_dim", "largest allowed side in pixels")],
        run: mat::texture_resolution,
    },
    CheckDef {
        id: "MAT-002",
        name: "Estimated GPU texture memory",
        category: "material",
        severity: Severity::Error,
        params: &["max_texture_mem"],
        what: "Sums the GPU memory of the measured images as glTF-Transform estimates it: PNG, JPEG and WebP as RGBA8 with a full mip chain (a 2048x2048 map is 22,369,620 bytes); KTX2 from its levels (UASTC and GPU formats from each level's uncompressed size, ETC1S as 8 bytes per 4x4 block, 16 with alpha).",
        why: "Texture memory is what runs mobile browsers and headsets out of memory; file size hides it, since a 300 KB JPEG still costs width x height x 4 bytes on the GPU.",
        fix: "Downscale the largest maps, merge small ones into an atlas, or ship KTX2 (Basis Universal) textures, which stay compressed on the GPU.",
        measured: &[
            ("gpu_bytes", "estimated GPU memory of all measured images, in bytes"),
            ("images", "images measured"),
            ("by_image", "per image (at most 100, largest first): pointer, gpu_bytes"),
        ],
        threshold: &[("max_texture_mem", "budget in bytes")],
        run: mat::texture_memory,
    },
    CheckDef {
        id: "MAT-004",
        name: "Material count",
        category: "material",
        severity: Severity::Warning,
        params: &["max_materials"],
        what: "Counts the distinct materials used by primitives drawn in the default scene; primitives without a material use the glTF default material, which counts as one.",
        why: "Every material is at least one shader state change and usually one more draw call; real-time budgets cap them.",
        fix: "Merge materials that differ only in texture into one material over a texture atlas; remove near-duplicate materials.",
        measured: &[
            ("materials", "distinct materials drawn (the default material counts once)"),
            ("materials_defined", "length of the document's materials array"),
            ("default_material_used", "whether some primitive has no material"),
        ],
        threshold: &[("max_materials", "budget")],
        run: mat::material_count,
    },
    CheckDef {
        id: "PERF-001",
        name: "Triangle count",
        category: "performance",
        severity: Severity::Error,
        params: &["max_tris"],
        what: "Counts the triangles drawn by the default scene, once per drawn instance (a mesh used by three nodes counts three times; EXT_mesh_gpu_instancing counts every instance). Triangle strips and fans count n-2, triangle lists n/3; points and lines draw none.",
        why: "Triangle throughput bounds frame rate on mobile and web GPUs; the budget is the profile's platform guidance.",
        fix: "Decimate (e.g. gltf-transform simplify, Blender's Decimate), bake detail into normal maps, or use levels of detail.",
        measured: &[("triangles", "triangles drawn, per instance"), ("instances", "drawn primitive instances")],
        threshold: &[("max_tris", "budget")],
        run: perf::triangle_count,
    },
    CheckDef {
        id: "PERF-002",
        name: "Vertex count",
        category: "performance",
        severity: Severity::Error,
        params: &["max_verts"],
        what: "Counts the vertices (POSITION elements, or decoded Draco points) of every primitive drawn, once per drawn instance.",
        why: "Vertex processing and memory scale with vertices, which UV seams and hard edges multiply beyond the triangle count.",
        fix: "Decimate, weld needless splits (gltf-transform weld), or reduce UV seams and hard edges.",
        measured: &[("vertices", "vertices drawn, per instance")],
        threshold: &[("max_verts", "budget")],
        run: perf::vertex_count,
    },
    CheckDef {
        id: "PERF-003",
        name: "Draw-call estimate",
        category: "performance",
        severity: Severity::Warning,
        params: &["max_draw_calls"],
        what: "Estimates draw calls as one per primitive per node that draws it; a GPU-instanced node (EXT_mesh_gpu_instancing) costs one per primitive whatever its instance count.",
        why: "Draw calls cost CPU time per frame; web and mobile engines stall long before the GPU is busy.",
        fix: "Join meshes that share a material, merge materials, or use EXT_mesh_gpu_instancing for repeated objects.",
        measured: &[
            ("draw_calls", "estimated draw calls"),
            ("primitives", "distinct primitives drawn"),
            ("gpu_instanced_nodes", "nodes drawn with EXT_mesh_gpu_instancing"),
        ],
        threshold: &[("max_draw_calls", "budget")],
        run: perf::draw_calls,
    },
    CheckDef {
        id: "RND-001",
        name: "Renders without error",
        category: "render",
        severity: Severity::Error,
        params: &[],
        what: "Full mode only: draws the six standard views (front, right, back, left, top, three-quarter) with the studio renderer (wgpu; Mesa's lavapipe where there is no GPU). Fails when the device refuses the scene (for example a buffer beyond its limits). Textures that cannot be decoded are drawn with their material's factors and listed in `notes`. No graphics adapter at all is an environment error (exit 4), not a failed check.",
        why: "An asset that cannot be drawn cannot be shown in a viewer, a store page or a thumbnail.",
        fix: "Read `error`; split very large meshes, and re-export textures as PNG, JPEG or WebP.",
        measured: &[
            ("views", "standard views asked for (6)"),
            ("rendered", "views drawn"),
            ("triangles_drawn", "triangles drawn per view, per instance"),
            ("draw_calls", "draw calls per view"),
            ("notes", "what could not be drawn as the file asks (undecodable or KTX2 textures)"),
            ("error", "why the views could not be drawn (on failure only)"),
        ],
        threshold: &[],
        run: rnd::renders,
    },
    CheckDef {
        id: "RND-002",
        name: "Visible pixels",
        category: "render",
        severity: Severity::Error,
        params: &[],
        what: "Full mode only: per standard view, the share of the frame the model covers (pixels whose coverage alpha is at least one half, with the model drawn over a transparent clear, so the background colour cannot be mistaken for the model). Fails when any view shows nothing.",
        why: "A view that shows nothing means the asset is invisible from there: all triangles degenerate or culled, fully transparent materials, or geometry so small or far that it vanishes.",
        fix: "Check GEO-004 (degenerate triangles), materials with alpha 0 or alphaMode mistakes, and single-sided planes seen from behind (set doubleSided).",
        measured: &[
            ("views", "per view: its name and visible_pct, % of the frame covered (2 decimals)"),
            ("min_visible_pct", "the smallest visible_pct"),
            ("empty_views", "views with no visible pixel"),
        ],
        threshold: &[("max_empty_views", "0")],
        run: rnd::visible_pixels,
    },
    CheckDef {
        id: "RND-003",
        name: "Silhouette coverage",
        category: "render",
        severity: Severity::Warning,
        params: &["min_coverage_pct"],
        what: "Full mode only: the mean, over the six standard views, of the % of the frame the model covers. The camera frames the scene's bounding sphere, so a low coverage means the bounds are much larger than what is seen: stray vertices or debris far away, or a long thin object.",
        why: "Thumbnails and viewers frame the bounding box; a model lost in empty space looks broken.",
        fix: "Remove stray geometry far from the model (see GEO-007), or accept the warning for genuinely thin objects.",
        measured: &[("coverage_pct", "mean % of the frame covered (2 decimals)"), ("views", "views measured")],
        threshold: &[("min_coverage_pct", "warn below this mean %")],
        run: rnd::coverage,
    },
    CheckDef {
        id: "SPEC-001",
        name: "glTF spec conformance",
        category: "spec",
        severity: Severity::Error,
        params: &[],
        what: "Runs the Khronos glTF-Validator (npm gltf-validator, pinned) on the file with its external resources and copies its errors and warnings verbatim; infos and hints are counted, not listed. It runs beside meshcheck's own checks. The validator does not decode Draco, meshopt or KTX2/Basis data: those extensions are listed in not_covered, and meshcheck's loader is what checks that such data decodes (a primitive whose stream does not decode is left out of the measurements and named in the report's notes).",
        why: "A file the reference validator rejects may load in one viewer and break in the next; conformance is the floor every pipeline check stands on.",
        fix: "Read the messages' codes and pointers (ISSUES.md of the glTF-Validator explains each code); most are fixed by re-exporting with a current exporter or running the file through glTF-Transform.",
        measured: &[
            ("errors", "validator errors (exact total)"),
            ("warnings", "validator warnings (exact total)"),
            ("infos", "validator infos (exact total)"),
            ("hints", "validator hints (exact total)"),
            ("truncated", "whether messages were cut at 1,000"),
            ("messages", "errors and warnings verbatim: code, message, severity (error or warning), pointer or offset"),
            ("by_code", "count of messages per code, every severity"),
            ("not_covered", "extensions the document uses whose data the validator did not check"),
        ],
        threshold: &[("max_errors", "always 0: any error fails"), ("max_warnings", "always 0: warnings alone warn")],
        run: spec::validator,
    },
    CheckDef {
        id: "SPEC-003",
        name: "External references resolvable",
        category: "spec",
        severity: Severity::Error,
        params: &[],
        what: "Resolves every buffer and image URI: data: URIs must decode, relative paths must exist beside the .gltf (or in the zip bundle, without leaving it); remote (http:, https:) and absolute URIs are never fetched and count as unresolved.",
        why: "A viewer that cannot load a texture shows the asset untextured or not at all; a bundle must be complete to be portable.",
        fix: "Put the named files next to the .gltf (or into the zip at the paths the URIs give), fix misspelt names, or pack the asset as a GLB.",
        measured: &[
            ("references", "URIs in buffers and images"),
            ("external", "of those, external files (not data: URIs)"),
            ("resolved", "URIs that resolved"),
            ("unresolved", "URIs that did not"),
            ("missing", "per unresolved URI (at most 100): pointer, uri, reason"),
        ],
        threshold: &[("max_unresolved", "always 0")],
        run: spec::references,
    },
    CheckDef {
        id: "SPEC-004",
        name: "File size vs budget",
        category: "spec",
        severity: Severity::Error,
        params: &["max_file_bytes"],
        what: "Measures the asset as a viewer downloads it: the GLB, or the .gltf plus every external file it references that resolved (a zip bundle counts its members uncompressed, not the zip).",
        why: "Download size is load time on the web and in AR quick-look viewers; platforms cap it.",
        fix: "Compress geometry (Draco or meshopt), compress textures (KTX2, WebP, smaller JPEGs), and remove unused data (gltf-transform prune).",
        measured: &[
            ("bytes", "asset size as delivered, in bytes"),
            ("input_bytes", "size of the input as given (the zip itself for a bundle)"),
        ],
        threshold: &[("max_file_bytes", "budget in bytes")],
        run: spec::file_size,
    },
    CheckDef {
        id: "TOP-001",
        name: "Quad reconstructibility",
        category: "topology",
        severity: Severity::Info,
        params: &[],
        what: "Pairs triangles across manifold, consistently wound edges into quads that are planar (face normals within 40 degrees, Blender's tris-to-quads default), convex and near-square (every corner within 90 +/- 40 degrees), greedily from the squarest; reports the share of triangles that pair.",
        why: "A high share means the mesh came from clean quad topology, which subdivides, deforms and UV-unwraps predictably; a low share suggests scanned or decimated triangle soup.",
        fix: "Nothing to fix: it measures. Retopologise where clean deformation or subdivision matters.",
        measured: &[
            ("quad_pct", "2 x quads / triangles x 100, 0..100"),
            ("quads", "quads formed"),
            ("triangles", "triangles in the welded mesh"),
        ],
        threshold: &[
            ("max_face_angle_deg", "40: planarity limit"),
            ("corner_tolerance_deg", "40: corners within 90 +/- this"),
        ],
        run: top::quad_reconstructibility,
    },
    CheckDef {
        id: "TOP-002",
        name: "Vertex valence regularity",
        category: "topology",
        severity: Severity::Info,
        params: &[],
        what: "For the interior vertices of the welded mesh (not on a boundary or non-manifold edge), counts the edges meeting at each (valence) and reports the share with the regular valence 6 and the histogram (valences of 12 or more counted together as \"12+\").",
        why: "Irregular vertices (poles) pinch shading and subdivision; a regular mesh deforms and tessellates evenly.",
        fix: "Nothing to fix: it measures. Redistribute poles away from deforming or highly curved areas.",
        measured: &[
            ("regular_valence_pct", "interior vertices of valence 6, %"),
            ("interior_vertices", "welded vertices not on boundary or non-manifold edges"),
            ("valence_histogram", "interior vertices per valence (keys are valences)"),
        ],
        threshold: &[("regular_valence", "6")],
        run: top::valence_regularity,
    },
    CheckDef {
        id: "TOP-003",
        name: "Triangle regularity",
        category: "topology",
        severity: Severity::Info,
        params: &[],
        what: "For every drawn triangle in world space, the quality 4*sqrt(3)*area/(a^2+b^2+c^2): 1 for an equilateral triangle, 0 for a degenerate one; reports the mean and the 5th percentile.",
        why: "Thin slivers shade poorly, interpolate attributes badly and hurt simulation; the 5th percentile shows how bad the worst part of the mesh is.",
        fix: "Nothing to fix: it measures. Remesh or re-triangulate sliver-heavy areas.",
        measured: &[
            ("quality_mean", "mean quality, 0..1"),
            ("quality_p5", "5th-percentile quality, 0..1"),
            ("triangles", "triangles measured"),
        ],
        threshold: &[],
        run: top::triangle_regularity,
    },
    CheckDef {
        id: "TOP-004",
        name: "Hard-edge share",
        category: "topology",
        severity: Severity::Info,
        params: &["hard_angle_deg", "weld_tolerance"],
        what: "Over the manifold (interior) edges of the welded mesh, the length-weighted share whose two face normals meet at hard_angle_deg (90) or more; faces with inconsistent winding are compared as if wound alike.",
        why: "Hard 90-degree edges read as CG in close-ups and alias in renders; small bevels catch highlights. A high share on a product model usually means unbevelled edges.",
        fix: "Nothing to fix: it measures. Bevel prominent edges (Blender: Bevel modifier) where the asset is seen up close.",
        measured: &[
            ("hard_edge_length_pct", "hard edge length / interior edge length x 100"),
            ("hard_edges", "interior edges whose faces meet at hard_angle_deg or more"),
            ("interior_edge_length_m", "total interior edge length, metres"),
            LOC,
            LOC_TOTAL,
        ],
        threshold: &[
            ("hard_angle_deg", "angle between face normals, degrees"),
            ("weld_tolerance", "weld tolerance, metres"),
        ],
        run: top::hard_edges,
    },
    CheckDef {
        id: "UV-001",
        name: "Missing UVs on textured mesh",
        category: "uv",
        severity: Severity::Error,
        params: &[],
        what: "For every primitive drawn, finds each texture its material samples (core and extension texture slots, honouring KHR_texture_transform's texCoord) and checks the primitive has the TEXCOORD_n set the slot reads.",
        why: "Without the UV set a texture samples one texel everywhere: the surface renders flat or black.",
        fix: "Unwrap the mesh (or export its UV map) so it carries the TEXCOORD sets its material reads, or remove the texture from the material.",
        measured: &[
            ("textured_primitives", "drawn primitives whose material samples a texture"),
            ("primitives_missing_uvs", "of those, primitives lacking a UV set their material reads"),
            ("missing", "per case (at most 100): pointer, material, tex_coord"),
            LOC,
            LOC_TOTAL,
        ],
        threshold: &[("max_primitives_missing_uvs", "always 0")],
        run: uv::missing_uvs,
    },
    CheckDef {
        id: "UV-002",
        name: "UV overlap",
        category: "uv",
        severity: Severity::Warning,
        params: &["max_uv_overlap_pct"],
        what: "Groups the triangles of the drawn primitives by texture space (material and UV set; each primitive once, since instances share their texture space) and rasterises each group inside the [0,1) UV tile at the resolution of the largest texture the material samples through that set (1024 when none; capped at 4096, a larger texture being measured at 4096 and its scale recorded, and halved again should a pathological layout ask for more than 2^28 texel visits). Sampling is at texel centres with a top-left fill rule, so triangles sharing an edge never cover a texel twice; a triangle lying outside the tile (a copy moved out by whole units, as bakers expect for mirrored parts) is ignored, one crossing the border is clipped, and one with non-finite UVs is left out. Overlap is the share of covered texels that two or more triangles cover, from 0 (no overlap) to 100 (every texel covered twice); the worst texture space is reported.",
        why: "Overlapping UVs make two surfaces share texels: baked lighting, ambient occlusion and hand-painted detail show up on both, and lightmaps break.",
        fix: "Unwrap again or pack islands so that none overlap (Blender: UV > Pack Islands); move intentionally mirrored or repeated parts out of the [0,1) tile by whole units so that bakers ignore them.",
        measured: &[
            ("overlap_pct", "overlapping_texels / covered_texels x 100 in the worst texture space, 0 to 100"),
            ("overlapping_texels", "texels covered by two or more triangles, in the worst texture space"),
            ("covered_texels", "texels covered by at least one triangle, in the worst texture space"),
            ("resolution_px", "longer side of the raster measured on, in texels (at most 4096)"),
            (
                "sets",
                "per texture space (at most 100, worst first): set (TEXCOORD_n), material (index, or null for the default material), resolution_px, scale (raster side / texture side, 1 unless the texture is over 4096 px), overlap_pct, overlapping_texels, covered_texels",
            ),
            LOC,
            LOC_TOTAL,
        ],
        threshold: &[("max_uv_overlap_pct", "largest allowed overlap, % of covered texels")],
        run: uv::overlap,
    },
    CheckDef {
        id: "UV-004",
        name: "Texel stretch",
        category: "uv",
        severity: Severity::Warning,
        params: &["max_stretch_ratio", "max_stretched_area_pct"],
        what: "For every drawn primitive (each once, placed by the world transform of its first instance, so node scale counts) and each of its UV sets, lays every triangle into its own 2D frame, forms the 2x2 Jacobian from that frame to UV (in texel proportions: u and v scaled by the width and height of the largest texture bound to the set), and takes the ratio of its singular values: 1 for a mapping that keeps shape at any scale, growing with anisotropic stretch, infinite for a triangle whose UVs have zero area. Triangles with zero 3D area or non-finite UVs are skipped. Stretched area is the share of 3D surface whose ratio exceeds max_stretch_ratio, 0 to 100; the worst UV set is reported.",
        why: "A stretched mapping smears texels along one direction: text and patterns distort, and detail is lost where the texture is squeezed.",
        fix: "Relax or re-unwrap the named meshes (Blender: UV > Unwrap with Conformal or Angle Based, then Minimize Stretch), add seams where a surface cannot lie flat, and keep node scale out of the UV layout by applying it before unwrapping.",
        measured: &[
            (
                "stretched_area_pct",
                "3D area of triangles whose ratio exceeds max_stretch_ratio, % of the area of the worst UV set, 0 to 100",
            ),
            (
                "stretch_p95",
                "area-weighted 95th percentile of the singular-value ratio in that set, >= 1, capped at 1,000,000 (an infinite, UV-degenerate ratio reads as 1,000,000); null when no triangle could be measured",
            ),
            (
                "sets",
                "per UV set (at most 100, worst first): set, stretched_area_pct, stretch_p95, triangles (triangles measured)",
            ),
            LOC,
            LOC_TOTAL,
        ],
        threshold: &[
            ("max_stretch_ratio", "singular-value ratio above which a triangle counts as stretched"),
            ("max_stretched_area_pct", "largest allowed stretched area, % of the surface"),
        ],
        run: uv::stretch,
    },
    CheckDef {
        id: "UV-005",
        name: "UV island padding",
        category: "uv",
        severity: Severity::Warning,
        params: &["min_padding_px"],
        what: "Splits each texture space (material and UV set, as in UV-002, at the same resolution: the largest bound texture, 1024 when none, capped at 4096) into islands, the triangles connected through shared UV edges (the same two UV points, compared exactly; islands touching only at a point stay apart). Each island is rasterised conservatively (every texel it touches, so slivers count) and an 8-connected distance transform from all islands at once gives the gap between neighbouring islands: the number of texels that no island touches between them, diagonal steps counting one, 0 when they touch or overlap. The search reaches twice min_padding_px (at least 8 px); gaps are given in pixels of the texture (raster texels divided by scale).",
        why: "Mipmapping and filtering blend neighbouring texels: islands closer than a few pixels bleed colour into each other at a distance, visible as seams; the padding needed grows with the number of mip levels a viewer uses.",
        fix: "Re-pack the UV islands with a larger margin (Blender: UV > Pack Islands, Margin; Substance and RizomUV: padding in pixels at the target resolution), or give the texture a higher resolution.",
        measured: &[
            (
                "min_padding_px",
                "smallest gap between two islands over all texture spaces, in texture pixels, 0 or more; searched_px when no two islands are that close",
            ),
            ("searched_px", "how far the search reached, in texture pixels: twice min_padding_px, at least 8"),
            ("islands", "UV islands in the [0,1) tile, summed over texture spaces"),
            (
                "island_pairs_too_close",
                "distinct pairs of neighbouring islands closer than min_padding_px, summed over texture spaces",
            ),
            (
                "sets",
                "per texture space (at most 100, closest first): set, material (index or null), resolution_px, scale, islands, min_padding_px, island_pairs_too_close",
            ),
            LOC,
            LOC_TOTAL,
        ],
        threshold: &[("min_padding_px", "smallest allowed gap between islands, in texture pixels")],
        run: uv::padding,
    },
    CheckDef {
        id: "XFM-001",
        name: "Real-world scale",
        category: "transform",
        severity: Severity::Warning,
        params: &["min_extent", "max_extent"],
        what: "Computes the world-space bounding box of everything the default scene draws (real vertex positions through every node transform and GPU instance; morph targets at the mesh's default weights; skinned meshes in their default pose) and compares its largest side, in metres, with min_extent and max_extent.",
        why: "glTF units are metres; an asset exported in centimetres is 100 times too large in AR and in scenes that mix assets.",
        fix: "Apply the unit conversion at export (Blender: Unit Scale; 3ds Max/Maya: export in metres) or scale the root node.",
        measured: &[
            ("largest_extent_m", "the largest side of the world bounding box, in metres"),
            ("extent_m", "the box's sides [x, y, z] in metres"),
            ("bounds_min", "minimum corner [x, y, z]"),
            ("bounds_max", "maximum corner [x, y, z]"),
        ],
        threshold: &[
            ("min_extent", "smallest plausible largest side, metres"),
            ("max_extent", "largest plausible largest side, metres"),
        ],
        run: xfm::real_world_scale,
    },
    CheckDef {
        id: "XFM-002",
        name: "Origin / pivot placement",
        category: "transform",
        severity: Severity::Warning,
        params: &["max_origin_offset_pct"],
        what: "Measures the distance from the scene origin to the world bounding box's bottom centre and to its centre, each as a percentage of the box's diagonal; passes when either is within max_origin_offset_pct.",
        why: "Viewers and AR placement put the origin on the floor or at the centre; an off-origin asset floats, sinks or orbits off-screen.",
        fix: "Move the geometry so the origin sits at its bottom centre (products on a floor) or its centre, and apply the transform before export.",
        measured: &[
            ("bottom_center_offset_pct", "distance origin to bottom centre, % of the diagonal"),
            ("center_offset_pct", "distance origin to centre, % of the diagonal"),
            ("bottom_center", "bottom centre [x, y, z]"),
            ("center", "centre [x, y, z]"),
            ("diagonal_m", "the bounding box diagonal in metres"),
        ],
        threshold: &[("max_origin_offset_pct", "largest allowed offset, % of the diagonal")],
        run: xfm::origin_placement,
    },
    CheckDef {
        id: "XFM-003",
        name: "Non-uniform node scale",
        category: "transform",
        severity: Severity::Warning,
        params: &["max_scale_ratio"],
        what: "For every node on a path from a scene root to a mesh, and every EXT_mesh_gpu_instancing instance, takes the local transform's scale (the matrix's column lengths) and flags a ratio of largest to smallest axis over max_scale_ratio, a mirroring (negative determinant) transform, or a zero scale. A scale such as (-1, -1, 1) is a rotation, not a mirror, and is not flagged as negative.",
        why: "Non-uniform scale shears normals and breaks physics and instancing; a mirroring scale flips triangle winding, so back-face culling hides the wrong side in viewers that ignore the determinant.",
        fix: "Apply scale to the mesh data (Blender: Apply > Scale) and keep node scales uniform and positive.",
        measured: &[
            ("nodes_checked", "nodes on paths to meshes"),
            ("instances_checked", "GPU instances checked"),
            ("non_uniform", "nodes and instances whose scale ratio exceeds the threshold"),
            ("negative_scale", "nodes and instances whose transform mirrors"),
            ("zero_scale", "nodes and instances with a zero scale axis"),
            ("worst_scale_ratio", "largest scale ratio seen (1 = uniform)"),
            LOC,
            LOC_TOTAL,
        ],
        threshold: &[("max_scale_ratio", "largest allowed axis ratio")],
        run: xfm::node_scale,
    },
];

/// The check with this ID.
pub fn find(id: &str) -> Option<&'static CheckDef> {
    CATALOG.iter().find(|c| c.id == id)
}

/// Every ID, in catalog order.
pub fn ids() -> Vec<&'static str> {
    CATALOG.iter().map(|c| c.id).collect()
}

/// The IDs a selector names: a check ID, a family prefix (`PERF`) or a
/// category name (`performance`), case-insensitive.
pub fn select(selector: &str) -> Option<Vec<&'static str>> {
    let s = selector.trim().to_ascii_uppercase();
    if let Some(c) = CATALOG.iter().find(|c| c.id == s) {
        return Some(vec![c.id]);
    }
    let prefix =
        FAMILIES.iter().find(|(p, cat)| *p == s || cat.eq_ignore_ascii_case(selector.trim())).map(|(p, _)| *p)?;
    let ids: Vec<_> = CATALOG.iter().filter(|c| c.id.split('-').next() == Some(prefix)).map(|c| c.id).collect();
    if ids.is_empty() { None } else { Some(ids) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{BUILTIN_NAMES, PARAMS, Profile};

    #[test]
    fn catalog_rules() {
        let mut prev = "";
        for c in CATALOG {
            assert!(c.id > prev, "{} is out of order", c.id);
            prev = c.id;
            let (fam, num) = c.id.split_once('-').expect("FAMILY-NNN");
            assert!(num.len() == 3 && num.bytes().all(|b| b.is_ascii_digit()), "{}", c.id);
            let (_, cat) = FAMILIES.iter().find(|(p, _)| *p == fam).expect("known family");
            assert_eq!(*cat, c.category, "{} category", c.id);
            for p in c.params {
                assert!(PARAMS.iter().any(|d| d.key == *p), "{} names unknown parameter {p}", c.id);
                for name in BUILTIN_NAMES {
                    assert!(Profile::builtin(name).unwrap().get(p).is_finite());
                }
            }
            if fam == "TOP" {
                assert_eq!(c.severity, Severity::Info);
            }
            assert!(!c.what.is_empty() && !c.why.is_empty() && !c.fix.is_empty() && !c.measured.is_empty());
        }
    }

    #[test]
    fn selectors() {
        assert_eq!(select("perf").unwrap(), vec!["PERF-001", "PERF-002", "PERF-003"]);
        assert_eq!(select("performance").unwrap().len(), 3);
        assert_eq!(select("uv-001").unwrap(), vec!["UV-001"]);
        assert!(select("GEO-999").is_none());
        assert!(select("nonsense").is_none());
    }
}
