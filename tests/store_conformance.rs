//! One conformance suite for every [`Store`]: each case runs against SQLite
//! (in memory) and against PostgreSQL (a fresh database on the throwaway
//! cluster of `support::postgres`). Behaviour that only a shared store has
//! (several nodes: concurrent claims, the advisory lock, LISTEN) is run
//! against PostgreSQL with several store instances on one database.

use crate::support::postgres;
use meshcheck::store::postgres::PgStore;
use meshcheck::store::sqlite::SqliteStore;
use meshcheck::store::{Bucket, Charge, Claimed, Delivery, Finish, Job, ReportLookup, Shot, Store, upload_state};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Both stores, named for failure messages.
fn stores() -> Vec<(&'static str, Arc<dyn Store>)> {
    vec![
        ("sqlite", Arc::new(SqliteStore::in_memory().unwrap())),
        ("postgres", Arc::new(PgStore::open(&postgres::database()).unwrap())),
    ]
}

fn job(id: &str, account: &str, credits: i64, created_at: i64) -> Job {
    Job {
        id: id.into(),
        account_id: account.into(),
        kind: "validate".into(),
        status: "queued".into(),
        params: "{}".into(),
        input: Some(format!("blob_{id}")),
        webhook_url: Some("http://127.0.0.1:9/hook".into()),
        credits,
        attempts: 0,
        lease_owner: None,
        lease_until: None,
        result: None,
        created_at,
        updated_at: created_at,
    }
}

fn delivery(id: &str, job_id: &str, account: &str) -> Delivery {
    Delivery {
        id: id.into(),
        job_id: job_id.into(),
        account_id: account.into(),
        url: "http://127.0.0.1:9/hook".into(),
        body: "{}".into(),
        state: "pending".into(),
        attempts: 0,
        next_at: 0,
    }
}

#[test]
fn accounts_keys_and_the_ledger() {
    for (name, s) in stores() {
        let (acct, key) = s.create_account("free", Some("a@example.com"), 1000).unwrap();
        assert_eq!(s.account_for_key(&key).unwrap().unwrap(), acct, "{name}");
        assert!(s.account_for_key("mk_live_nope").unwrap().is_none());
        assert_eq!(s.accounts().unwrap(), vec![acct.clone()], "{name}");
        assert_eq!(s.charge(&acct.id, 2, 3, 1000, "validate", "r1", 1001).unwrap(), Charge::Charged { balance: 1 });
        assert_eq!(
            s.charge(&acct.id, 2, 3, 1000, "validate", "r2", 1002).unwrap(),
            Charge::Insufficient { balance: 1, required: 2 },
            "{name}"
        );
        assert_eq!(s.refund("r1", "internal", 1003).unwrap(), 2, "{name}");
        assert_eq!(s.refund("r1", "internal", 1004).unwrap(), 0, "{name}: idempotent");
        assert_eq!(s.refund("nothing", "internal", 1004).unwrap(), 0, "{name}");
        assert_eq!(s.credits_used(&acct.id, 1000).unwrap(), 0, "{name}");
        assert_eq!(
            s.ledger(&acct.id, 1000).unwrap(),
            vec![(1001, 2, "validate".into(), "r1".into()), (1003, -2, "internal".into(), "r1".into())],
            "{name}"
        );
        let k2 = s.create_key(&acct.id, meshcheck::store::LIVE_KEY_PREFIX, 1005).unwrap();
        assert!(s.create_key("acct_nope", meshcheck::store::LIVE_KEY_PREFIX, 1005).is_err(), "{name}");
        assert_eq!(s.revoke_key(&key, 1006).unwrap(), 1, "{name}");
        assert!(s.account_for_key(&key).unwrap().is_none(), "{name}");
        assert_eq!(s.revoke_key(&k2[..12], 1006).unwrap(), 1, "{name}");
        assert!(s.account_for_key(&k2).unwrap().is_none(), "{name}");
        let keys = s.keys(&acct.id).unwrap();
        assert_eq!(keys.len(), 2, "{name}");
        assert!(keys.iter().all(|k| k.revoked_at == Some(1006)), "{name}");
    }
}

#[test]
fn reports_expire_to_tombstones() {
    for (name, s) in stores() {
        s.put_report("rep_1", "acct_a", 0, 100, "{}").unwrap();
        assert_eq!(s.report("rep_1", "acct_a").unwrap(), ReportLookup::Found("{}".into()), "{name}");
        assert_eq!(s.report("rep_1", "acct_b").unwrap(), ReportLookup::Missing, "{name}");
        assert_eq!(s.expire_reports(99).unwrap(), 0, "{name}");
        assert_eq!(s.expire_reports(100).unwrap(), 1, "{name}");
        assert_eq!(s.expire_reports(100).unwrap(), 0, "{name}");
        assert_eq!(s.report("rep_1", "acct_a").unwrap(), ReportLookup::Expired, "{name}");
        assert_eq!(s.report("rep_1", "acct_b").unwrap(), ReportLookup::Missing, "{name}");
    }
}

#[test]
fn uploads_move_by_compare_and_set_and_expire() {
    for (name, s) in stores() {
        let up = s.create_upload("acct_a", 0, 100).unwrap();
        assert_eq!(s.upload(&up.id).unwrap().unwrap(), up, "{name}");
        assert_eq!(s.upload_by_blob(&up.blob_id, "acct_a").unwrap().unwrap().id, up.id, "{name}");
        assert!(s.upload_by_blob(&up.blob_id, "acct_b").unwrap().is_none(), "{name}");
        assert!(s.move_upload(&up.id, upload_state::PENDING, upload_state::RECEIVING, None).unwrap());
        assert!(!s.move_upload(&up.id, upload_state::PENDING, upload_state::RECEIVING, None).unwrap(), "{name}");
        assert!(s.move_upload(&up.id, upload_state::RECEIVING, upload_state::STORED, Some(42)).unwrap());
        assert_eq!(s.upload(&up.id).unwrap().unwrap().bytes, Some(42), "{name}");
        let other = s.create_upload("acct_a", 0, 200).unwrap();
        let expired = s.expire_uploads(150).unwrap();
        assert_eq!(expired.len(), 1, "{name}");
        assert_eq!((expired[0].id.as_str(), expired[0].state.as_str()), (up.id.as_str(), "stored"), "{name}");
        assert_eq!(s.upload(&up.id).unwrap().unwrap().state, upload_state::EXPIRED, "{name}");
        assert!(!s.live_blobs().unwrap().contains(&up.blob_id), "{name}");
        assert!(!s.live_blobs().unwrap().contains(&other.blob_id), "{name}: pending, no bytes yet");
        assert!(s.move_upload(&other.id, upload_state::PENDING, upload_state::STORED, Some(1)).unwrap());
        assert!(s.live_blobs().unwrap().contains(&other.blob_id), "{name}: stored");
    }
}

#[test]
fn a_job_is_charged_and_queued_together_or_not_at_all() {
    for (name, s) in stores() {
        let (acct, _) = s.create_account("free", None, 0).unwrap();
        assert_eq!(
            s.charge_and_queue(&job("job_1", &acct.id, 2, 10), 3, 0, "validate (job)").unwrap(),
            Charge::Charged { balance: 1 },
            "{name}"
        );
        assert_eq!(s.job("job_1", &acct.id).unwrap().unwrap().credits, 2, "{name}");
        assert!(s.job("job_1", "acct_other").unwrap().is_none(), "{name}");
        assert_eq!(
            s.charge_and_queue(&job("job_2", &acct.id, 2, 11), 3, 0, "validate (job)").unwrap(),
            Charge::Insufficient { balance: 1, required: 2 },
            "{name}"
        );
        assert!(s.job("job_2", &acct.id).unwrap().is_none(), "{name}: no job without its charge");
        assert!(s.charge_and_queue(&job("job_1", &acct.id, 1, 12), 3, 0, "dup").is_err(), "{name}: a duplicate id");
        assert_eq!(s.ledger(&acct.id, 0).unwrap().len(), 1, "{name}: the failed insert took its charge back");
        assert_eq!(s.job_counts().unwrap(), vec![("queued".to_string(), 1)], "{name}");
    }
}

#[test]
fn leases_claim_renew_finish_and_take_over() {
    for (name, s) in stores() {
        let (acct, _) = s.create_account("free", None, 0).unwrap();
        for (i, id) in ["job_a", "job_b"].iter().enumerate() {
            s.charge_and_queue(&job(id, &acct.id, 1, 10 + i as i64), 10, 0, "validate (job)").unwrap();
        }
        // Oldest first, leased to the claiming node.
        let Claimed { job: a, took_over } = s.claim_job("node_1", 100, 130).unwrap().unwrap();
        assert_eq!((a.id.as_str(), took_over, a.attempts), ("job_a", false, 1), "{name}");
        assert_eq!((a.lease_owner.as_deref(), a.lease_until), (Some("node_1"), Some(130)), "{name}");
        let b = s.claim_job("node_2", 100, 130).unwrap().unwrap().job;
        assert_eq!(b.id, "job_b", "{name}");
        assert!(s.claim_job("node_2", 100, 130).unwrap().is_none(), "{name}: nothing left while leases hold");
        assert!(s.renew_lease("job_a", "node_1", 160).unwrap(), "{name}");
        assert!(!s.renew_lease("job_a", "node_2", 160).unwrap(), "{name}: not node_2's lease");
        // node_2 dies: at 131 its lease has run out and node_1 takes the job over.
        let taken = s.claim_job("node_1", 131, 161).unwrap().unwrap();
        assert_eq!((taken.job.id.as_str(), taken.took_over, taken.job.attempts), ("job_b", true, 2), "{name}");
        // The dead node's late finish changes nothing.
        let late = Finish {
            id: "job_b",
            node: "node_2",
            status: "done",
            result: "{\"late\":true}",
            refund: None,
            delivery: None,
            now: 140,
        };
        assert!(!s.finish_job(&late).unwrap(), "{name}: a lost lease cannot finish");
        assert!(!s.renew_lease("job_b", "node_2", 200).unwrap(), "{name}");
        // A failure: status, refund and webhook message together.
        let d = delivery("msg_b", "job_b", &acct.id);
        let fail = Finish {
            id: "job_b",
            node: "node_1",
            status: "failed",
            result: "{}",
            refund: Some("refund: job failed"),
            delivery: Some(&d),
            now: 150,
        };
        assert!(s.finish_job(&fail).unwrap(), "{name}");
        assert!(!s.finish_job(&fail).unwrap(), "{name}: finished once");
        let fb = s.job("job_b", &acct.id).unwrap().unwrap();
        assert_eq!((fb.status.as_str(), fb.input.as_deref(), fb.lease_owner.as_deref()), ("failed", None, None));
        assert_eq!(s.credits_used(&acct.id, 0).unwrap(), 1, "{name}: job_b refunded, job_a charged");
        let claimed = Delivery { next_at: 200, ..d.clone() };
        assert_eq!(s.claim_deliveries(150, 10, 200).unwrap(), vec![claimed], "{name}");
        // A release (shutdown) by the holder only.
        assert!(!s.release_job("job_a", "node_2", 150).unwrap(), "{name}");
        assert!(s.release_job("job_a", "node_1", 150).unwrap(), "{name}");
        let again = s.claim_job("node_3", 151, 181).unwrap().unwrap();
        assert_eq!((again.job.id.as_str(), again.took_over, again.job.attempts), ("job_a", false, 2), "{name}");
        // The janitor releases leases that ran out.
        assert!(s.release_expired_leases(180).unwrap().is_empty(), "{name}");
        assert_eq!(s.release_expired_leases(181).unwrap(), vec!["job_a".to_string()], "{name}");
        let c = s.claim_job("node_1", 182, 212).unwrap().unwrap();
        assert_eq!((c.job.attempts, c.took_over), (3, false), "{name}");
        let done = Finish {
            id: "job_a",
            node: "node_1",
            status: "done",
            result: "{}",
            refund: None,
            delivery: None,
            now: 190,
        };
        assert!(s.finish_job(&done).unwrap(), "{name}");
        assert_eq!(s.credits_used(&acct.id, 0).unwrap(), 1, "{name}: done keeps its charge");
        let mut counts = s.job_counts().unwrap();
        counts.sort();
        assert_eq!(counts, vec![("done".to_string(), 1), ("failed".to_string(), 1)], "{name}");
        assert!(s.interrupted_jobs().unwrap().is_empty(), "{name}");
    }
}

#[test]
fn deliveries_are_claimed_for_one_attempt_at_a_time() {
    for (name, s) in stores() {
        let mut d1 = delivery("msg_1", "job_1", "acct_a");
        d1.next_at = 10;
        let mut d2 = delivery("msg_2", "job_2", "acct_a");
        d2.next_at = 20;
        s.insert_delivery(&d1, 0).unwrap();
        s.insert_delivery(&d2, 0).unwrap();
        assert!(s.claim_deliveries(9, 10, 100).unwrap().is_empty(), "{name}");
        let got = s.claim_deliveries(15, 10, 100).unwrap();
        assert_eq!(got.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), ["msg_1"], "{name}");
        let got = s.claim_deliveries(50, 10, 100).unwrap();
        assert_eq!(got.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), ["msg_2"], "{name}: msg_1 is held");
        s.update_delivery("msg_1", "delivered", 1, 50, Some(200)).unwrap();
        let got = s.claim_deliveries(100, 10, 200).unwrap();
        assert_eq!(
            got.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
            ["msg_2"],
            "{name}: due again after the hold"
        );
    }
}

#[test]
fn shots_settings_and_billing() {
    for (name, s) in stores() {
        let shot = |id: &str, owner: &str, exp: i64| Shot {
            id: id.into(),
            owner_id: owner.into(),
            account_id: "acct_a".into(),
            name: "front".into(),
            ext: "png".into(),
            rv: 0.0,
            rh: 90.0,
            size: 512,
            created_at: 0,
            expires_at: exp,
        };
        s.put_shots(&[shot("shot_2", "rpt_1", 100), shot("shot_1", "rpt_1", 100), shot("shot_3", "rnd_1", 200)])
            .unwrap();
        let of: Vec<String> = s.shots_of("rpt_1", "acct_a").unwrap().into_iter().map(|s| s.id).collect();
        assert_eq!(of, ["shot_2", "shot_1"], "{name}: insertion order");
        assert!(s.shots_of("rpt_1", "acct_b").unwrap().is_empty(), "{name}");
        assert_eq!(s.shot("shot_3").unwrap().unwrap(), shot("shot_3", "rnd_1", 200), "{name}");
        assert_eq!(s.expire_shots(150).unwrap().len(), 2, "{name}");
        assert!(s.shot("shot_1").unwrap().is_none(), "{name}");
        assert_eq!(s.delete_shots_of("rnd_1").unwrap().len(), 1, "{name}");
        assert_eq!(s.setting_or_insert("k", "first").unwrap(), "first", "{name}");
        assert_eq!(s.setting_or_insert("k", "second").unwrap(), "first", "{name}");
        s.set_setting("k", "third").unwrap();
        assert_eq!(s.setting_or_insert("k", "x").unwrap(), "third", "{name}");
        let (acct, _) = s.create_account("free", None, 0).unwrap();
        assert!(s.set_billing(&acct.id, "indie", Some("cus_1"), Some("stripe"), Some("sub_1")).unwrap());
        assert_eq!(s.account_by_billing(None, Some("sub_1")).unwrap().unwrap().plan, "indie", "{name}");
        assert_eq!(s.account_by_billing(Some("cus_1"), None).unwrap().unwrap().id, acct.id, "{name}");
        assert!(s.account_by_billing(Some("cus_2"), Some("sub_2")).unwrap().is_none(), "{name}");
        assert!(s.set_billing(&acct.id, "free", None, None, None).unwrap());
        let a = s.account(&acct.id).unwrap().unwrap();
        assert_eq!((a.customer_id.as_deref(), a.subscription_id), (Some("cus_1"), None), "{name}: the customer stays");
        assert!(s.first_billing_event("evt_1", "x", 0).unwrap(), "{name}");
        assert!(!s.first_billing_event("evt_1", "x", 1).unwrap(), "{name}");
    }
}

#[test]
fn buckets_are_read_and_written_atomically() {
    for (name, s) in stores() {
        let mut seen = Vec::new();
        for i in 0..3 {
            s.update_bucket("k", &mut |old| {
                seen.push(old);
                Bucket { units: old.map_or(0, |b| b.units) + 1, at_ms: i }
            })
            .unwrap();
        }
        assert_eq!(
            seen,
            vec![None, Some(Bucket { units: 1, at_ms: 0 }), Some(Bucket { units: 2, at_ms: 1 })],
            "{name}"
        );
        assert_eq!(s.prune_buckets(2).unwrap(), 0, "{name}");
        assert_eq!(s.prune_buckets(3).unwrap(), 1, "{name}");
        // Many threads on one bucket: no update is lost.
        std::thread::scope(|sc| {
            for _ in 0..8 {
                let s = s.clone();
                sc.spawn(move || {
                    for _ in 0..25 {
                        s.update_bucket("shared", &mut |old| Bucket {
                            units: old.map_or(0, |b| b.units) + 1,
                            at_ms: 0,
                        })
                        .unwrap();
                    }
                });
            }
        });
        let mut last = None;
        s.update_bucket("shared", &mut |old| {
            last = old;
            old.unwrap()
        })
        .unwrap();
        assert_eq!(last.unwrap().units, 200, "{name}");
    }
}

#[test]
fn concurrent_charges_never_overdraw() {
    for (name, s) in stores() {
        let (acct, _) = s.create_account("free", None, 0).unwrap();
        let charged = AtomicUsize::new(0);
        std::thread::scope(|sc| {
            for t in 0..8 {
                let (s, acct, charged) = (s.clone(), &acct, &charged);
                sc.spawn(move || {
                    for i in 0..10 {
                        let r = format!("r{t}_{i}");
                        if let Charge::Charged { .. } = s.charge(&acct.id, 1, 25, 0, "validate", &r, 1).unwrap() {
                            charged.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(charged.load(Ordering::Relaxed), 25, "{name}");
        assert_eq!(s.credits_used(&acct.id, 0).unwrap(), 25, "{name}");
    }
}

#[test]
fn concurrent_claims_take_each_job_once() {
    for (name, s) in stores() {
        let (acct, _) = s.create_account("free", None, 0).unwrap();
        for i in 0..40 {
            s.charge_and_queue(&job(&format!("job_{i:02}"), &acct.id, 1, i), 100, 0, "validate (job)").unwrap();
        }
        let claimed = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|sc| {
            for n in 0..4 {
                let (s, claimed) = (s.clone(), &claimed);
                sc.spawn(move || {
                    let node = format!("node_{n}");
                    while let Some(c) = s.claim_job(&node, 100, 200).unwrap() {
                        claimed.lock().unwrap().push(c.job.id);
                    }
                });
            }
        });
        let mut ids = claimed.into_inner().unwrap();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 40, "{name}: every job claimed exactly once");
    }
}

#[test]
fn postgres_nodes_share_the_lock_the_queue_and_notifications() {
    let url = postgres::database();
    // Nodes starting together each run the migrations safely.
    let nodes: Vec<PgStore> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..4).map(|_| sc.spawn(|| PgStore::open(&url).unwrap())).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut c = ::postgres::Client::connect(&url, ::postgres::NoTls).unwrap();
    let versions: i64 = c.query_one("SELECT COUNT(*) FROM meshcheck_migrations", &[]).unwrap().get(0);
    assert_eq!(versions, 1, "each migration applied once");
    assert!(nodes[0].shared());
    // The exclusive section: one node at a time.
    let mut inner = None;
    let ran = nodes[0]
        .exclusive("janitor", &mut || {
            let mut nested_ran = false;
            inner = Some(nodes[1].exclusive("janitor", &mut || nested_ran = true).unwrap());
            assert!(!nested_ran);
        })
        .unwrap();
    assert!(ran);
    assert_eq!(inner, Some(false), "another node is refused while one holds it");
    assert!(nodes[1].exclusive("janitor", &mut || {}).unwrap(), "released after the work");
    // LISTEN: a job queued on one node wakes another.
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    nodes[2]
        .listen_jobs(Box::new(move || {
            let _ = tx.lock().unwrap().send(());
        }))
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let (acct, _) = nodes[3].create_account("free", None, 0).unwrap();
    let mut woke = false;
    let mut i = 0;
    // The listener connects on its own thread: queue until it hears one.
    while !woke && std::time::Instant::now() < deadline {
        nodes[3].charge_and_queue(&job(&format!("job_{i}"), &acct.id, 1, i), 1000, 0, "validate (job)").unwrap();
        i += 1;
        woke = rx.recv_timeout(std::time::Duration::from_millis(500)).is_ok();
    }
    assert!(woke, "no notification reached the listening node");
}

#[test]
fn database_urls_are_parsed_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.sqlite");
    let s = meshcheck::store::database::open(Some(&format!("sqlite:{}", path.display())), dir.path()).unwrap();
    assert!(!s.shared());
    assert!(path.exists());
    let e = meshcheck::store::database::open(Some("mysql://x"), dir.path()).err().unwrap();
    assert!(e.message.contains("expected sqlite:PATH or postgres://"), "{}", e.message);
    let e = meshcheck::store::database::open(Some("sqlite:"), dir.path()).err().unwrap();
    assert!(e.message.contains("needs a path"), "{}", e.message);
    let e = meshcheck::store::database::open(Some("postgres://127.0.0.1:1/none"), dir.path()).err().unwrap();
    assert!(e.message.contains("database"), "{}", e.message);
    let s = meshcheck::store::database::open(Some(&postgres::database()), dir.path()).unwrap();
    assert!(s.shared());
}
