//! PERF-005's overdraw analysis: meshoptimizer's C `meshopt_analyzeOverdraw`
//! (the `meshopt` crate) against meshcheck's `geom::overdraw::analyze`, in
//! the same run, on the same arrays: a 12-triangle cube, a 2,048-triangle
//! and a 131,072-triangle sphere (testkit's UV spheres; the larger is
//! PERF-005's cap), and the triangle primitives of the shared Avocado and
//! FlightHelmet samples (all of a file's primitives, one call each, as
//! PERF-005 makes them). Every row first asserts that both give the same
//! pixels covered, pixels shaded and ratio bits.
//!
//! `cargo bench --bench overdraw`. MESHCHECK_BENCH_RUNS sets the timed
//! batches per row (default 7; the median batch is reported); each batch
//! repeats the calls for at least 50 ms.

/// The test support (code-built shapes under `testkit`), shared with the
/// integration tests.
#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;
use support::{testkit, util};

use meshcheck::geom::overdraw::{Overdraw, analyze};
use std::time::{Duration, Instant};

/// One mesh: triangles and positions.
type Mesh = (Vec<[u32; 3]>, Vec<[f32; 3]>);
/// One row: a name and its meshes, analyzed in turn.
type Case = (String, Vec<Mesh>);
/// An analyzer.
type Analyzer = fn(&[[u32; 3]], &[[f32; 3]]) -> Overdraw;

/// The C analyzer.
fn reference(triangles: &[[u32; 3]], positions: &[[f32; 3]]) -> Overdraw {
    util::overdraw_reference(triangles, positions)
}

/// A testkit primitive as arrays.
fn arrays(p: testkit::Prim) -> Mesh {
    let idx = p.indices.expect("indexed shape");
    (idx.chunks_exact(3).map(|t| [t[0], t[1], t[2]]).collect(), p.positions)
}

/// Every triangle primitive of a shared asset, as the loader reads it.
fn asset(rel: &str) -> Vec<Mesh> {
    let input = meshcheck::asset::Input::from_path(&util::model(rel)).expect("shared asset");
    let asset = meshcheck::asset::load(input).expect("loads");
    asset.scene.primitives.into_iter().filter(|p| !p.triangles.is_empty()).map(|p| (p.triangles, p.positions)).collect()
}

/// Median time of one pass over the case's meshes with `f`.
fn time(meshes: &[Mesh], runs: usize, f: Analyzer) -> Duration {
    let pass = || {
        for (t, p) in meshes {
            std::hint::black_box(f(std::hint::black_box(t), p));
        }
    };
    pass(); // warm
    let mut batches: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let mut n = 0u32;
            while start.elapsed() < Duration::from_millis(50) {
                pass();
                n += 1;
            }
            start.elapsed() / n
        })
        .collect();
    batches.sort();
    batches[runs / 2]
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn main() {
    let runs: usize = std::env::var("MESHCHECK_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    let cases: Vec<Case> = vec![
        ("cube".into(), vec![arrays(testkit::cube(1.0))]),
        ("sphere 32x33".into(), vec![arrays(testkit::sphere(32, 33, 1.0))]),
        ("sphere 256x257".into(), vec![arrays(testkit::sphere(256, 257, 1.0))]),
        ("Avocado".into(), asset("khronos-sample-models/Avocado.zip")),
        ("FlightHelmet".into(), asset("khronos-sample-models/FlightHelmet.zip")),
    ];
    println!(
        "PERF-005 overdraw: meshopt_analyzeOverdraw (C) against geom::overdraw::analyze, median of {runs} batches"
    );
    println!(
        "{:<16} {:>5} {:>9} {:>12} {:>12} {:>8}",
        "case", "calls", "triangles", "C (us)", "meshcheck (us)", "speed-up"
    );
    for (name, meshes) in &cases {
        for (t, p) in meshes {
            let (want, got) = (reference(t, p), analyze(t, p));
            assert_eq!(
                (got.pixels_covered, got.pixels_shaded, got.overdraw.to_bits()),
                (want.pixels_covered, want.pixels_shaded, want.overdraw.to_bits()),
                "{name}: the analyzers differ"
            );
        }
        let triangles: usize = meshes.iter().map(|m| m.0.len()).sum();
        let c = time(meshes, runs, reference);
        let ours = time(meshes, runs, analyze);
        println!(
            "{:<16} {:>5} {:>9} {:>12} {:>12} {:>7.1}x",
            name,
            meshes.len(),
            triangles,
            us(c),
            us(ours),
            c.as_secs_f64() / ours.as_secs_f64()
        );
    }
}
