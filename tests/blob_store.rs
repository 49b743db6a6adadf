//! The blob stores behind `meshcheck serve --blob-store` (docs/blob-store.md):
//! one conformance suite run against the folder store (`DirBlobs`) and an
//! S3 bucket (`S3Blobs` on a real `s3s-fs`, tests/support/s3.rs); the
//! sweeps' one-hour margin; the URL's startup errors; and `meshcheck serve
//! --blob-store s3://…` end to end: an upload streamed into the bucket,
//! validated by blob_id in full mode, leaves no blob behind, and the
//! report's still is served from the bucket; and serve's async path, whose
//! validator reads the job's input from a file in either store.

use crate::serve::{srv, srv_over, start as start_in_process, wait_job};
use crate::support::s3;
use crate::support::serve_process::{create_account, serve_command, start};
use meshcheck::store::s3::S3Bucket;
use meshcheck::store::{Blobs, DirBlobs, ORPHAN_MARGIN_S};
use serde_json::{Value, json};
use std::io::ErrorKind;
use std::time::{Duration, Instant};

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

/// The current second, once at least 100 ms of it have passed: a file's
/// modification time comes from the kernel's coarse clock, which may still
/// show the previous second for a few milliseconds after it ended.
fn into_a_second() -> i64 {
    loop {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        if t.subsec_millis() >= 100 {
            return t.as_secs() as i64;
        }
        std::thread::sleep(Duration::from_millis(100 - u64::from(t.subsec_millis())));
    }
}

/// `n` bytes that differ from one offset to the next, and by `seed`.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u64).wrapping_mul(2_654_435_761).rotate_right(7) as u8 ^ seed).collect()
}

/// Waits up to 10 s for `f` to hold.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What every [`Blobs`] must do. `leftovers` lists what the backend keeps of
/// unfinished writes (partial files, open multipart uploads).
fn conformance(blobs: &dyn Blobs, leftovers: &dyn Fn() -> Vec<String>) {
    assert!(blobs.ids().unwrap().is_empty(), "the suite starts on an empty store");

    // Put, read, list, delete (twice: the second is no error).
    blobs.put("blob_a", b"hello").unwrap();
    blobs.put("blob_empty", b"").unwrap();
    assert_eq!(blobs.read("blob_a").unwrap(), b"hello");
    assert_eq!(blobs.read("blob_empty").unwrap(), b"");
    assert_eq!(blobs.ids().unwrap(), ["blob_a", "blob_empty"]);
    blobs.delete("blob_a").unwrap();
    blobs.delete("blob_a").unwrap();
    assert_eq!(blobs.read("blob_a").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(blobs.ids().unwrap(), ["blob_empty"]);
    blobs.delete("blob_empty").unwrap();

    // Create only: a stored blob is never replaced.
    blobs.put("blob_c", b"first").unwrap();
    assert_eq!(blobs.put("blob_c", b"second").unwrap_err().kind(), ErrorKind::AlreadyExists);
    assert_eq!(blobs.read("blob_c").unwrap(), b"first");
    // Two writers at once, small (one request each) and large (multipart):
    // the first to finish wins, the second fails and changes nothing.
    for (id, n) in [("blob_d", 3), ("blob_e", 9_000_000)] {
        let (one, two) = (pattern(n, 1), pattern(n, 2));
        let mut w1 = blobs.writer(id).unwrap();
        let mut w2 = blobs.writer(id).unwrap();
        w1.write_all(&one).unwrap();
        w2.write_all(&two).unwrap();
        w1.finish().unwrap();
        assert_eq!(w2.finish().unwrap_err().kind(), ErrorKind::AlreadyExists, "{id}");
        assert!(blobs.read(id).unwrap() == one, "{id}: the first writer's bytes");
    }
    eventually("the losing multipart upload is aborted", || leftovers().is_empty());

    // A streamed write of 20 MB in 64 KiB chunks, invisible until finished.
    let data = pattern(20_000_000, 3);
    let mut w = blobs.writer("blob_big").unwrap();
    for chunk in data.chunks(64 << 10) {
        w.write_all(chunk).unwrap();
    }
    assert!(!blobs.ids().unwrap().contains(&"blob_big".to_string()), "visible only once finished");
    assert_eq!(blobs.read("blob_big").unwrap_err().kind(), ErrorKind::NotFound);
    w.finish().unwrap();
    assert!(blobs.read("blob_big").unwrap() == data, "20 MB read back");

    // An abandoned writer leaves nothing, small or past one part.
    for (id, n) in [("blob_gone_small", 1000), ("blob_gone_big", 20_000_000)] {
        let mut w = blobs.writer(id).unwrap();
        for chunk in data[..n].chunks(1 << 20) {
            w.write_all(chunk).unwrap();
        }
        drop(w);
        assert_eq!(blobs.read(id).unwrap_err().kind(), ErrorKind::NotFound, "{id}");
    }
    eventually("an abandoned writer leaves nothing behind", || leftovers().is_empty());
    assert_eq!(blobs.ids().unwrap(), ["blob_big", "blob_c", "blob_d", "blob_e"]);

    // Ids are [A-Za-z0-9_]+: anything else is refused before any write.
    for bad in ["", "../x", "a/b", "x y", "shot_1.png", "é", "blob%2F"] {
        assert_eq!(blobs.put(bad, b"x").unwrap_err().kind(), ErrorKind::InvalidInput, "{bad:?}");
        assert_eq!(blobs.writer(bad).err().map(|e| e.kind()), Some(ErrorKind::InvalidInput), "{bad:?}");
        assert_eq!(blobs.read(bad).unwrap_err().kind(), ErrorKind::InvalidInput, "{bad:?}");
        assert_eq!(blobs.delete(bad).unwrap_err().kind(), ErrorKind::InvalidInput, "{bad:?}");
    }
    assert_eq!(blobs.ids().unwrap(), ["blob_big", "blob_c", "blob_d", "blob_e"]);

    // ids_older_than: by last modification, whole seconds.
    for id in blobs.ids().unwrap() {
        blobs.delete(&id).unwrap();
    }
    let t0 = into_a_second();
    blobs.put("blob_old", b"old").unwrap();
    while now() < t0 + 2 {
        std::thread::sleep(Duration::from_millis(50));
    }
    let t1 = into_a_second();
    blobs.put("blob_new", b"new").unwrap();
    assert_eq!(blobs.ids_older_than(t0).unwrap(), Vec::<String>::new());
    assert_eq!(blobs.ids_older_than(t1).unwrap(), ["blob_old"]);
    assert_eq!(blobs.ids_older_than(now() + 2).unwrap(), ["blob_new", "blob_old"]);
    assert_eq!(blobs.ids().unwrap(), ["blob_new", "blob_old"]);
}

#[test]
fn dir_blobs_pass_the_blob_conformance_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("blobs");
    let blobs = DirBlobs::new(dir.clone()).unwrap();
    let partials = || {
        let names = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned());
        names.filter(|n| !meshcheck::store::is_blob_id(n)).collect()
    };
    conformance(&blobs, &partials);
    // The layout of a single node: one file per blob, named by its id.
    assert_eq!(std::fs::read(dir.join("blob_old")).unwrap(), b"old");
}

#[test]
fn s3_blobs_pass_the_blob_conformance_suite() {
    let server = s3::start().unwrap();
    let env = server.env();
    let settings = env.iter().map(|(k, v)| (*k, v.as_str()));
    let bucket = S3Bucket::with_settings(&server.bucket, "/suite/eu/", settings).unwrap();
    bucket.check().unwrap();
    let blobs = bucket.blobs("blobs");
    conformance(&blobs, &|| server.open_multipart_uploads());
    // Objects at PREFIX/blobs/ID; a sibling folder is another store.
    assert_eq!(server.objects("suite"), ["suite/eu/blobs/blob_new", "suite/eu/blobs/blob_old"]);
    let shots = bucket.blobs("screenshots");
    shots.put("shot_1", b"png").unwrap();
    assert_eq!(shots.ids().unwrap(), ["shot_1"]);
    assert_eq!(blobs.ids().unwrap(), ["blob_new", "blob_old"]);
    assert_eq!(std::fs::read(server.data_dir().join("meshcheck-test/suite/eu/screenshots/shot_1")).unwrap(), b"png");
    // A bucket that does not exist, or a wrong secret, fails the check.
    let env = server.env();
    let settings = env.iter().map(|(k, v)| (*k, v.as_str()));
    assert!(S3Bucket::with_settings("no-such-bucket", "", settings).unwrap().check().is_err());
    let wrong = env.iter().map(|(k, v)| (*k, if *k == "AWS_SECRET_ACCESS_KEY" { "wrong" } else { v.as_str() }));
    assert!(S3Bucket::with_settings(&server.bucket, "", wrong).unwrap().check().is_err());
}

/// The orphan sweeps at start take only what is an hour old: a blob or still
/// written a moment ago may belong to another server's job or render that
/// is not recorded yet.
#[test]
fn orphan_sweeps_spare_what_is_younger_than_an_hour() {
    let s = srv();
    s.state.blobs.put("blob_young", b"input").unwrap();
    s.state.shots.put("shot_young", b"png").unwrap();
    meshcheck::server::jobs::sweep_orphans(&s.state);
    meshcheck::server::media::sweep_orphans(&s.state);
    assert_eq!(s.state.blobs.ids().unwrap(), ["blob_young"]);
    assert_eq!(s.state.shots.ids().unwrap(), ["shot_young"]);
    s.clock.advance(ORPHAN_MARGIN_S + 1);
    meshcheck::server::jobs::sweep_orphans(&s.state);
    meshcheck::server::media::sweep_orphans(&s.state);
    s.assert_no_blobs();
    assert!(s.state.shots.ids().unwrap().is_empty());
}

/// A blob-store URL that names neither a folder nor a bucket stops the
/// server at start, whether it comes from the flag or the config file.
#[test]
fn a_blob_store_url_other_than_file_or_s3_is_a_startup_error() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    std::fs::write(&config, "[serve]\nblob_store = \"gs://from-the-file\"\n").unwrap();
    let mut flag = serve_command(tmp.path());
    flag.args(["--blob-store", "http://minio:9000/bucket"]);
    let mut file = serve_command(tmp.path());
    file.env("MESHCHECK_CONFIG", &config);
    for (mut cmd, url) in [(flag, "http://minio:9000/bucket"), (file, "gs://from-the-file")] {
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{url}: {stderr}");
        // The terminal report wraps its lines: compare without the wrapping.
        let flat: String = stderr.split_whitespace().filter(|w| *w != "│").collect();
        assert!(flat.contains(url) && flat.contains("file://DIR") && flat.contains("s3://BUCKET[/PREFIX]"), "{stderr}");
    }
}

/// `meshcheck serve --blob-store s3://BUCKET/PREFIX`: the upload streams
/// into the bucket (12 MB: a multipart upload), validation by blob_id in
/// full mode leaves no blob behind, the report's stills are objects in the
/// bucket served through their signed URLs, and the data folder holds
/// neither blobs nor stills. A bucket that does not exist stops the start.
#[test]
fn serve_keeps_uploads_and_stills_in_an_s3_bucket() {
    let server = s3::start().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let key = create_account(tmp.path(), "free", &[]).unwrap().key;

    let mut missing = serve_command(tmp.path());
    missing.args(["--blob-store", "s3://no-such-bucket"]).envs(server.env());
    let out = missing.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("s3://no-such-bucket"), "{stderr}");

    let mut cmd = serve_command(tmp.path());
    cmd.args(["--blob-store", &format!("s3://{}/e2e", server.bucket)]).envs(server.env());
    let mut served = start(cmd, Duration::from_secs(60)).unwrap();
    let base = format!("http://{}", served.addr);
    let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(120)).build().unwrap();

    let begin: Value =
        http.post(format!("{base}/v1/uploads")).header("x-api-key", &key).send().unwrap().json().unwrap();
    let blob_id = begin["blob_id"].as_str().unwrap().to_string();
    let glb = crate::testkit::padded_glb(12_000_000);
    let put =
        http.put(begin["upload_url"].as_str().unwrap()).header("x-api-key", &key).body(glb.clone()).send().unwrap();
    assert_eq!(put.status(), 200, "{}", put.text().unwrap());
    assert_eq!(server.objects("e2e"), [format!("e2e/blobs/{blob_id}")], "the upload is an object in the bucket");
    let object = server.data_dir().join(&server.bucket).join("e2e/blobs").join(&blob_id);
    assert!(std::fs::read(object).unwrap() == glb, "stored byte for byte");

    let r = http
        .post(format!("{base}/v1/validate"))
        .header("x-api-key", &key)
        .json(&json!({"blob_id": blob_id, "mode": "full", "screenshots": true}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    let report: Value = r.json().unwrap();
    let shots = report["screenshots"].as_array().unwrap();
    assert_eq!(shots.len(), 6, "{report}");
    let objects = server.objects("e2e");
    assert_eq!(objects.len(), 6, "no blob left, six stills: {objects:?}");
    assert!(objects.iter().all(|o| o.starts_with("e2e/screenshots/shot_")), "{objects:?}");
    for shot in shots {
        let url = shot["url"].as_str().unwrap();
        let png = http.get(url).send().unwrap();
        assert_eq!(png.status(), 200);
        let png = png.bytes().unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let id = url.rsplit('/').next().unwrap().split('.').next().unwrap();
        let object = server.data_dir().join(&server.bucket).join("e2e/screenshots").join(id);
        assert!(std::fs::read(object).unwrap() == png, "{id}: served from the bucket");
    }
    let status = served.stop(Duration::from_secs(60)).unwrap();
    assert!(status.success(), "{status:?}");
    for folder in ["blobs", "screenshots"] {
        let files = std::fs::read_dir(tmp.path().join(folder)).map(|d| d.count()).unwrap_or(0);
        assert_eq!(files, 0, "nothing in the data folder's {folder}/");
    }
}

/// serve's async path (`POST /v1/validate {"blob_id"}` above the sync
/// limit): SPEC-001's validator reads the job's input from a file and the
/// bytes are not held for it (the blob's own file in a folder store; for a
/// bucket, a copy in the data folder's `spill/`, deleted with the job). The
/// report is the one the sync path gives with the bytes in memory, the
/// validator's finding on the file's content included, in both stores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_path_validates_from_a_file_with_the_report_of_the_bytes() {
    let server = s3::start().unwrap();
    let env = server.env();
    // The cube whose JSON names an unknown property: a finding only the validator makes.
    let glb = {
        let glb = crate::serve::box_glb();
        let at = glb.windows(7).position(|w| w == b"\"scene\"").unwrap();
        let mut out = glb.clone();
        out[at..at + 7].copy_from_slice(b"\"scenx\"");
        out
    };
    let mut reports = Vec::new();
    for (store, sync_max_bytes) in [("dir", 0), ("s3", 0), ("dir", 20_000_000), ("s3", 20_000_000)] {
        let tmp = tempfile::tempdir().unwrap();
        let blobs: std::sync::Arc<dyn Blobs> = match store {
            "dir" => std::sync::Arc::new(DirBlobs::new(tmp.path().join("blobs")).unwrap()),
            _ => {
                let settings = env.iter().map(|(k, v)| (*k, v.as_str()));
                let bucket =
                    S3Bucket::with_settings(&server.bucket, &format!("async{sync_max_bytes}"), settings).unwrap();
                std::sync::Arc::new(bucket.blobs("blobs"))
            }
        };
        let s = srv_over(tmp.path(), blobs, |c| c.sync_max_bytes = sync_max_bytes);
        let (_, key) = s.account("studio");
        let run = start_in_process(&s).await;
        let http = reqwest::Client::new();
        let begin: Value =
            http.post(run.url("/v1/uploads")).header("x-api-key", &key).send().await.unwrap().json().await.unwrap();
        let path = begin["upload_url"].as_str().unwrap().strip_prefix("http://meshcheck.test").unwrap().to_string();
        let put = http.put(run.url(&path)).header("x-api-key", &key).body(glb.clone()).send().await.unwrap();
        assert_eq!(put.status(), 200);
        let r = http
            .post(run.url("/v1/validate"))
            .header("x-api-key", &key)
            .json(&json!({"blob_id": begin["blob_id"]}))
            .send()
            .await
            .unwrap();
        let mut report: Value = if sync_max_bytes == 0 {
            assert_eq!(r.status(), 202, "{store}: a job");
            let env: Value = r.json().await.unwrap();
            let job = env["job_id"].as_str().unwrap().to_string();
            let status = wait_job(&s, &key, &job, |st| st == "done" || st == "failed").await;
            assert_eq!(status, "done", "{store}");
            let done: Value = http
                .get(run.url(&format!("/v1/jobs/{job}")))
                .header("x-api-key", &key)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            done["result"].clone()
        } else {
            assert_eq!(r.status(), 200, "{store}: in the request");
            r.json().await.unwrap()
        };
        run.stop().await;
        let spec = report["checks"].as_array().unwrap().iter().find(|c| c["id"] == "SPEC-001").unwrap().clone();
        assert_ne!(spec["status"], "skipped", "{store} {sync_max_bytes}: {spec}");
        assert_eq!(spec["measured"]["messages"][0]["code"], "UNEXPECTED_PROPERTY", "{store}: {spec}");
        // The bucket's copy for the validator is made for a job alone, and deleted with it.
        let spilled = std::fs::read_dir(tmp.path().join("spill")).map(|d| d.count());
        match (store, sync_max_bytes) {
            ("s3", 0) => assert_eq!(spilled.unwrap(), 0, "the copy is deleted"),
            _ => assert!(spilled.is_err(), "{store} {sync_max_bytes}: no copy made"),
        }
        let o = report.as_object_mut().unwrap();
        for volatile in ["report_id", "created_at", "expires_at"] {
            o.remove(volatile);
        }
        o["input"].as_object_mut().unwrap().remove("filename");
        reports.push(report);
    }
    for r in &reports[1..] {
        assert_eq!(r, &reports[0]);
    }
}

/// A crash leaves the bucket's copies of job inputs in the data folder's
/// `spill/`: the janitor deletes those an hour old on every node, never a
/// younger one (a job that may still be running).
#[test]
fn copies_of_job_inputs_a_crash_left_are_swept_once_an_hour_old() {
    let s = srv();
    let spill = s.dir.join(meshcheck::server::work::SPILL_DIR);
    std::fs::create_dir_all(&spill).unwrap();
    std::fs::write(spill.join("input_old"), b"glb").unwrap();
    std::fs::write(spill.join("input_young"), b"glb").unwrap();
    let two_hours_ago = std::time::SystemTime::now() - Duration::from_secs(2 * 3600);
    std::fs::File::options().write(true).open(spill.join("input_old")).unwrap().set_modified(two_hours_ago).unwrap();
    assert_eq!(meshcheck::server::work::sweep_spill(&s.state), 1);
    assert!(!spill.join("input_old").exists());
    assert!(spill.join("input_young").exists());
}
