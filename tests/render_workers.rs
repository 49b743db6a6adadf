//! Parallel render workers (issue 22, point 4): a [`Pool`] of N
//! `meshcheck render-worker` processes draws separate requests at the same
//! time, each worker is recycled on its own [`Limits`], a worker killed
//! mid-request fails that request only, a pool of one still serialises,
//! and `meshcheck serve --render-workers N` (environment, `[serve]` table)
//! reaches the server's pool and refuses 0 and non-numbers.

use crate::support::serve_process::{serve_command, start};
use crate::testkit::{Doc, sphere};
use meshcheck::error::ErrorCode;
use meshcheck::render::worker::{Limits, Pool, Restarts, Served};
use meshcheck::render::{Request, Source};
use std::path::PathBuf;
use std::sync::Barrier;
use std::time::{Duration, Instant};

fn pool(workers: usize, renders: u32) -> Pool {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_meshcheck"));
    Pool::new(exe, Limits { renders, rss_bytes: 4 << 30, timeout: Duration::from_secs(120) }, workers)
}

/// A sphere of about 20,000 triangles: each request (a worker's start on
/// first use, loading, six 512 px stills) takes a good fraction of a second
/// on lavapipe, long enough for two to meet.
fn source() -> Source {
    Source { filename: "sphere.glb".into(), bytes: Doc::single(sphere(100, 101, 1.0)).to_glb(), dir: None }
}

type Outcome = meshcheck::error::Result<(meshcheck::render::Rendered, Served)>;

/// `n` renders of `src`, started together on `n` threads.
fn at_once(pool: &Pool, src: &Source, n: usize) -> Vec<Outcome> {
    let go = Barrier::new(n);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    go.wait();
                    pool.render_traced(src, &Request::standard(512)).map(|(r, _, served)| (r, served))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a render thread panicked")).collect()
    })
}

fn served(outcomes: &[Outcome]) -> Vec<Served> {
    outcomes
        .iter()
        .map(|o| match o {
            Ok((_, s)) => *s,
            Err(e) => panic!("a render failed: {e:?}"),
        })
        .collect()
}

fn overlap(a: &Served, b: &Served) -> bool {
    a.started_ms.max(b.started_ms) < a.ended_ms.min(b.ended_ms)
}

#[test]
fn two_requests_draw_in_two_workers_at_the_same_time() {
    let p = pool(2, 50);
    assert_eq!((p.size(), p.busy(), p.started()), (2, 0, 0));
    let src = source();
    let out = at_once(&p, &src, 2);
    let s = served(&out);
    assert_ne!(s[0].pid, s[1].pid, "two worker processes");
    assert!(overlap(&s[0], &s[1]), "the workers drew at the same time: {s:?}");
    // The same stills either way.
    let (a, b) = (&out[0].as_ref().unwrap().0, &out[1].as_ref().unwrap().0);
    assert_eq!(a.stills.len(), 6);
    assert!(a.stills.iter().zip(&b.stills).all(|(x, y)| x.image == y.image));
    assert_eq!((p.started(), p.busy(), p.restarts()), (2, 0, Restarts::default()));
    let mut pids = p.pids();
    pids.sort_unstable();
    let mut want = vec![s[0].pid, s[1].pid];
    want.sort_unstable();
    assert_eq!(pids, want, "both stay up, idle");
}

#[test]
fn a_pool_of_one_draws_one_request_at_a_time() {
    let p = pool(1, 50);
    let src = source();
    let s = served(&at_once(&p, &src, 2));
    assert_eq!(s[0].pid, s[1].pid, "one worker");
    assert!(!overlap(&s[0], &s[1]), "one after the other: {s:?}");
    assert_eq!((p.started(), p.restarts()), (1, Restarts::default()));
}

#[test]
#[cfg(unix)]
fn a_worker_killed_mid_request_fails_that_request_only() {
    let p = pool(2, 50);
    let src = source();
    let go = Barrier::new(3);
    let (outcomes, killed) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    go.wait();
                    p.render_traced(&src, &Request::standard(512)).map(|(_, _, served)| served)
                })
            })
            .collect();
        go.wait();
        // Both workers busy (each is still starting its device): kill one.
        let t = Instant::now();
        while p.busy_pids().len() < 2 && t.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let busy = p.busy_pids();
        assert_eq!(busy.len(), 2, "two workers serving at once");
        unsafe { libc::kill(busy[0] as i32, libc::SIGKILL) };
        let outcomes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (outcomes, busy[0])
    });
    let failed: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    let ok: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!((failed.len(), ok.len()), (1, 1), "{outcomes:?}");
    assert_eq!(failed[0].code, ErrorCode::RenderFailed);
    assert_ne!(ok[0].pid, killed, "the other worker answered");
    assert_eq!(p.restarts(), Restarts { failed: 1, ..Restarts::default() });
    // The pool recovers: two more at once, the survivor and a fresh worker.
    let s = served(&at_once(&p, &src, 2));
    assert!(s.iter().all(|s| s.pid != killed));
    assert!(s.iter().any(|s| s.pid == ok[0].pid), "the survivor kept serving: {s:?}");
    assert_eq!(p.started(), 3);
}

/// Each worker counts its own renders: with a share of 3, two workers that
/// drew 2 each are both still up; a third round retires both.
#[test]
fn each_worker_is_replaced_after_its_own_share() {
    let p = pool(2, 3);
    let src = source();
    let first = served(&at_once(&p, &src, 2));
    let second = served(&at_once(&p, &src, 2));
    let pids = |s: &[Served]| {
        let mut v: Vec<u32> = s.iter().map(|s| s.pid).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(pids(&first), pids(&second), "the same two workers: {first:?} {second:?}");
    assert_eq!(p.restarts(), Restarts::default(), "4 renders, 2 each: none has served 3");
    assert_eq!(p.pids().len(), 2);
    let third = served(&at_once(&p, &src, 2));
    assert_eq!(pids(&third), pids(&first));
    assert_eq!(p.restarts(), Restarts { renders: 2, ..Restarts::default() });
    assert_eq!((p.pids(), p.started()), (vec![], 2), "both replaced, none started yet");
}

/// What `meshcheck serve` says about a bad worker count, from each source.
#[test]
fn serve_refuses_zero_or_non_numeric_render_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    let run = |args: &[&str], env: Option<&str>, file: Option<&str>| {
        let mut cmd = serve_command(&tmp.path().join("data"));
        cmd.args(args).env_remove("MESHCHECK_RENDER_WORKERS").env("MESHCHECK_CONFIG", &config);
        if let Some(v) = env {
            cmd.env("MESHCHECK_RENDER_WORKERS", v);
        }
        std::fs::write(&config, file.map_or(String::new(), |v| format!("[serve]\nrender_workers = {v}\n"))).unwrap();
        let out = cmd.output().unwrap();
        (out.status, String::from_utf8_lossy(&out.stderr).to_string())
    };
    for (args, env) in [
        (&["--render-workers", "0"][..], None),
        (&["--render-workers", "two"][..], None),
        (&["--render-workers=-1"][..], None),
        (&[][..], Some("0")),
        (&[][..], Some("many")),
    ] {
        let (status, err) = run(args, env, None);
        assert_eq!(status.code(), Some(2), "{args:?} {env:?}: a usage error\n{err}");
        assert!(err.contains("--render-workers"), "{args:?} {env:?}: names the flag\n{err}");
        assert!(err.contains("1..=256") || err.contains("invalid digit"), "{args:?} {env:?}: says why\n{err}");
    }
    let (status, err) = run(&[], None, Some("0"));
    assert!(!status.success());
    assert!(err.contains("[serve] render_workers must be between 1 and 256, got 0"), "{err}");
    let (status, err) = run(&[], None, Some("\"two\""));
    assert!(!status.success());
    assert!(err.contains("[serve]: invalid type: string \"two\", expected u64"), "{err}");
}

/// The flag, the environment and the `[serve]` table each size the
/// server's pool (read back from `meshcheck_render_workers` on /metrics);
/// the flag wins over the file.
#[test]
fn serve_render_workers_come_from_the_flag_the_environment_or_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    let gauge = |args: &[&str], env: Option<&str>, file: Option<&str>| -> String {
        let mut cmd = serve_command(&tmp.path().join("data"));
        cmd.args(["--metrics-addr", "127.0.0.1:0"])
            .args(args)
            .env_remove("MESHCHECK_RENDER_WORKERS")
            .env("MESHCHECK_CONFIG", &config);
        if let Some(v) = env {
            cmd.env("MESHCHECK_RENDER_WORKERS", v);
        }
        std::fs::write(&config, file.map_or(String::new(), |v| format!("[serve]\nrender_workers = {v}\n"))).unwrap();
        let mut served = start(cmd, Duration::from_secs(60)).unwrap();
        let url = format!("http://{}/metrics", served.metrics_addr().expect("a metrics listener"));
        let text = reqwest::blocking::get(url).unwrap().text().unwrap();
        served.stop(Duration::from_secs(60)).unwrap();
        let line = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
                .unwrap_or_else(|| panic!("no {name} in\n{text}"))
                .to_string()
        };
        assert_eq!(line("meshcheck_render_workers_busy"), "0");
        line("meshcheck_render_workers")
    };
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(gauge(&[], None, None), meshcheck::render::worker::default_workers(cores).to_string());
    assert_eq!(gauge(&["--render-workers", "3"], None, None), "3");
    assert_eq!(gauge(&[], Some("2"), None), "2");
    assert_eq!(gauge(&[], None, Some("4")), "4");
    assert_eq!(gauge(&["--render-workers", "1"], None, Some("4")), "1", "the flag wins");
    assert_eq!(gauge(&["--render-in-process"], None, None), "0", "no workers when drawing in process");
}
