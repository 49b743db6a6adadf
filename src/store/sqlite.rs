//! [`Store`] on one SQLite file (rusqlite, bundled SQLite): WAL journal,
//! numbered migrations embedded in the binary and applied at open
//! (`PRAGMA user_version` records the last one).
//!
//! One connection behind a mutex: every statement here is short, SQLite
//! serialises writers anyway, and charges must be atomic (check and debit in
//! one `BEGIN IMMEDIATE` transaction).

use super::{
    Account, Bucket, Charge, Claimed, Delivery, Finish, Job, KeyInfo, ReportLookup, Shot, Store, Upload, db_error,
    key_hash, new_key, random_id, upload_state,
};
use crate::error::{Error, ErrorCode, Result};
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

/// The migrations, in order; entry `i` takes the schema to version `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/001_init.sql"),
    include_str!("migrations/002_media_billing.sql"),
    include_str!("migrations/003_leases_buckets.sql"),
];

/// The SQLite store.
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

impl SqliteStore {
    /// Opens (or creates) the database file and brings its schema up to date.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        let conn = Connection::open(path).map_err(db_error)?;
        Self::init(conn)
    }

    /// A private in-memory database (tests).
    pub fn in_memory() -> Result<SqliteStore> {
        Self::init(Connection::open_in_memory().map_err(db_error)?)
    }

    fn init(mut conn: Connection) -> Result<SqliteStore> {
        conn.pragma_update(None, "journal_mode", "WAL").map_err(db_error)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(db_error)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(db_error)?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(db_error)?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(db_error)?;
        if version as usize > MIGRATIONS.len() {
            return Err(Error::internal(format!(
                "the database has schema version {version}, newer than this meshcheck ({}); upgrade meshcheck",
                MIGRATIONS.len()
            )));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = conn.transaction().map_err(db_error)?;
            tx.execute_batch(sql).map_err(db_error)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64).map_err(db_error)?;
            tx.commit().map_err(db_error)?;
        }
        Ok(SqliteStore { conn: Mutex::new(conn) })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves no half-done transaction
        // (rusqlite rolls back on drop), so a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Deletes the screenshot rows matching `filter` (one parameter) and returns them.
    fn take_shots(&self, filter: &str, param: &dyn rusqlite::ToSql) -> Result<Vec<Shot>> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(db_error)?;
        let gone: Vec<Shot> = {
            let mut st =
                tx.prepare(&format!("SELECT {SHOT_COLS} FROM screenshots WHERE {filter}")).map_err(db_error)?;
            st.query_map([param], shot_row).map_err(db_error)?.collect::<rusqlite::Result<_>>().map_err(db_error)?
        };
        tx.execute(&format!("DELETE FROM screenshots WHERE {filter}"), [param]).map_err(db_error)?;
        tx.commit().map_err(db_error)?;
        Ok(gone)
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound.
    pub fn integrity_check(&self) -> Result<String> {
        self.conn().query_row("PRAGMA integrity_check", [], |r| r.get(0)).map_err(db_error)
    }
}

const ACCOUNT_COLS: &str =
    "id, email, plan, webhook_secret, created_at, customer_id, subscription_provider, subscription_id";

fn account_row(r: &Row) -> rusqlite::Result<Account> {
    Ok(Account {
        id: r.get(0)?,
        email: r.get(1)?,
        plan: r.get(2)?,
        webhook_secret: r.get(3)?,
        created_at: r.get(4)?,
        customer_id: r.get(5)?,
        subscription_provider: r.get(6)?,
        subscription_id: r.get(7)?,
    })
}

const UPLOAD_COLS: &str = "id, blob_id, account_id, state, bytes, expires_at";

fn upload_row(r: &Row) -> rusqlite::Result<Upload> {
    Ok(Upload {
        id: r.get(0)?,
        blob_id: r.get(1)?,
        account_id: r.get(2)?,
        state: r.get(3)?,
        bytes: r.get(4)?,
        expires_at: r.get(5)?,
    })
}

const JOB_COLS: &str = "id, account_id, kind, status, params, input, webhook_url, credits, attempts, result, created_at, updated_at, lease_owner, lease_until";

fn job_row(r: &Row) -> rusqlite::Result<Job> {
    Ok(Job {
        id: r.get(0)?,
        account_id: r.get(1)?,
        kind: r.get(2)?,
        status: r.get(3)?,
        params: r.get(4)?,
        input: r.get(5)?,
        webhook_url: r.get(6)?,
        credits: r.get(7)?,
        attempts: r.get(8)?,
        result: r.get(9)?,
        created_at: r.get(10)?,
        updated_at: r.get(11)?,
        lease_owner: r.get(12)?,
        lease_until: r.get(13)?,
    })
}

const DELIVERY_COLS: &str = "id, job_id, account_id, url, body, state, attempts, next_at";

fn delivery_row(r: &Row) -> rusqlite::Result<Delivery> {
    Ok(Delivery {
        id: r.get(0)?,
        job_id: r.get(1)?,
        account_id: r.get(2)?,
        url: r.get(3)?,
        body: r.get(4)?,
        state: r.get(5)?,
        attempts: r.get(6)?,
        next_at: r.get(7)?,
    })
}

const SHOT_COLS: &str = "id, owner_id, account_id, name, ext, rv, rh, size, created_at, expires_at";

fn shot_row(r: &Row) -> rusqlite::Result<Shot> {
    Ok(Shot {
        id: r.get(0)?,
        owner_id: r.get(1)?,
        account_id: r.get(2)?,
        name: r.get(3)?,
        ext: r.get(4)?,
        rv: r.get(5)?,
        rh: r.get(6)?,
        size: r.get(7)?,
        created_at: r.get(8)?,
        expires_at: r.get(9)?,
    })
}

fn insert_key(conn: &Connection, account_id: &str, prefix: &str, now: i64) -> Result<String> {
    let key = new_key(prefix);
    conn.execute(
        "INSERT INTO api_keys (hash, prefix, account_id, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![key_hash(&key), &key[..12], account_id, now],
    )
    .map_err(db_error)?;
    Ok(key)
}

impl Store for SqliteStore {
    fn create_account(&self, plan: &str, email: Option<&str>, now: i64) -> Result<(Account, String)> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(db_error)?;
        let account = Account {
            id: random_id("acct_", 16),
            email: email.map(str::to_string),
            plan: plan.to_string(),
            webhook_secret: random_id("whsec_", 32),
            created_at: now,
            customer_id: None,
            subscription_provider: None,
            subscription_id: None,
        };
        tx.execute(
            "INSERT INTO accounts (id, email, plan, webhook_secret, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![account.id, account.email, account.plan, account.webhook_secret, now],
        )
        .map_err(db_error)?;
        let key = insert_key(&tx, &account.id, super::LIVE_KEY_PREFIX, now)?;
        tx.commit().map_err(db_error)?;
        Ok((account, key))
    }

    fn accounts(&self) -> Result<Vec<Account>> {
        let conn = self.conn();
        let mut st =
            conn.prepare(&format!("SELECT {ACCOUNT_COLS} FROM accounts ORDER BY created_at, id")).map_err(db_error)?;
        st.query_map([], account_row).map_err(db_error)?.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    fn account(&self, id: &str) -> Result<Option<Account>> {
        self.conn()
            .query_row(&format!("SELECT {ACCOUNT_COLS} FROM accounts WHERE id = ?1"), [id], account_row)
            .optional()
            .map_err(db_error)
    }

    fn keys(&self, account_id: &str) -> Result<Vec<KeyInfo>> {
        let conn = self.conn();
        let mut st = conn
            .prepare("SELECT prefix, account_id, created_at, revoked_at FROM api_keys WHERE account_id = ?1 ORDER BY created_at")
            .map_err(db_error)?;
        st.query_map([account_id], |r| {
            Ok(KeyInfo { prefix: r.get(0)?, account_id: r.get(1)?, created_at: r.get(2)?, revoked_at: r.get(3)? })
        })
        .map_err(db_error)?
        .collect::<rusqlite::Result<_>>()
        .map_err(db_error)
    }

    fn create_key(&self, account_id: &str, prefix: &str, now: i64) -> Result<String> {
        let conn = self.conn();
        let exists: bool = conn
            .query_row("SELECT EXISTS(SELECT 1 FROM accounts WHERE id = ?1)", [account_id], |r| r.get(0))
            .map_err(db_error)?;
        if !exists {
            return Err(Error::new(ErrorCode::NotFound, format!("no account {account_id}")));
        }
        insert_key(&conn, account_id, prefix, now)
    }

    fn revoke_key(&self, key_or_prefix: &str, now: i64) -> Result<usize> {
        let conn = self.conn();
        let n = if key_or_prefix.len() > 12 {
            conn.execute(
                "UPDATE api_keys SET revoked_at = ?2 WHERE hash = ?1 AND revoked_at IS NULL",
                params![key_hash(key_or_prefix), now],
            )
        } else {
            conn.execute(
                "UPDATE api_keys SET revoked_at = ?2 WHERE prefix = ?1 AND revoked_at IS NULL",
                params![key_or_prefix, now],
            )
        };
        n.map_err(db_error)
    }

    fn account_for_key(&self, key: &str) -> Result<Option<Account>> {
        let cols = ACCOUNT_COLS.split(", ").map(|c| format!("a.{c}")).collect::<Vec<_>>().join(", ");
        self.conn()
            .query_row(
                &format!(
                    "SELECT {cols} FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = ?1 AND k.revoked_at IS NULL"
                ),
                [key_hash(key)],
                account_row,
            )
            .optional()
            .map_err(db_error)
    }

    fn credits_used(&self, account_id: &str, period: i64) -> Result<i64> {
        used(&self.conn(), account_id, period)
    }

    fn charge(
        &self,
        account_id: &str,
        credits: i64,
        allowance: i64,
        period: i64,
        reason: &str,
        reference: &str,
        now: i64,
    ) -> Result<Charge> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_error)?;
        let charged = charge_in(&tx, account_id, credits, allowance, period, reason, reference, now)?;
        tx.commit().map_err(db_error)?;
        Ok(charged)
    }

    fn refund(&self, reference: &str, reason: &str, now: i64) -> Result<i64> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_error)?;
        let refunded = refund_in(&tx, reference, reason, now)?;
        tx.commit().map_err(db_error)?;
        Ok(refunded)
    }

    fn ledger(&self, account_id: &str, period: i64) -> Result<Vec<(i64, i64, String, String)>> {
        let conn = self.conn();
        let mut st = conn
            .prepare(
                "SELECT at, credits, reason, reference FROM ledger WHERE account_id = ?1 AND period = ?2 ORDER BY id",
            )
            .map_err(db_error)?;
        st.query_map(params![account_id, period], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .map_err(db_error)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_error)
    }

    fn put_report(&self, id: &str, account_id: &str, created_at: i64, expires_at: i64, body: &str) -> Result<()> {
        self.conn()
            .execute(
                "INSERT INTO reports (id, account_id, created_at, expires_at, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, account_id, created_at, expires_at, body],
            )
            .map(|_| ())
            .map_err(db_error)
    }

    fn report(&self, id: &str, account_id: &str) -> Result<ReportLookup> {
        let conn = self.conn();
        let body: Option<String> = conn
            .query_row("SELECT body FROM reports WHERE id = ?1 AND account_id = ?2", params![id, account_id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(db_error)?;
        if let Some(b) = body {
            return Ok(ReportLookup::Found(b));
        }
        let gone: bool = conn
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM report_tombstones WHERE id = ?1 AND account_id = ?2)",
                params![id, account_id],
                |r| r.get(0),
            )
            .map_err(db_error)?;
        Ok(if gone { ReportLookup::Expired } else { ReportLookup::Missing })
    }

    fn expire_reports(&self, now: i64) -> Result<usize> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(db_error)?;
        tx.execute(
            "INSERT OR IGNORE INTO report_tombstones (id, account_id, expired_at) SELECT id, account_id, ?1 FROM reports WHERE expires_at <= ?1",
            [now],
        )
        .map_err(db_error)?;
        let n = tx.execute("DELETE FROM reports WHERE expires_at <= ?1", [now]).map_err(db_error)?;
        tx.commit().map_err(db_error)?;
        Ok(n)
    }

    fn create_upload(&self, account_id: &str, now: i64, expires_at: i64) -> Result<Upload> {
        let up = Upload {
            id: random_id("upl_", 24),
            blob_id: random_id("blob_", 24),
            account_id: account_id.to_string(),
            state: upload_state::PENDING.into(),
            bytes: None,
            expires_at,
        };
        self.conn()
            .execute(
                "INSERT INTO uploads (id, blob_id, account_id, state, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![up.id, up.blob_id, up.account_id, up.state, now, expires_at],
            )
            .map_err(db_error)?;
        Ok(up)
    }

    fn upload(&self, id: &str) -> Result<Option<Upload>> {
        self.conn()
            .query_row(&format!("SELECT {UPLOAD_COLS} FROM uploads WHERE id = ?1"), [id], upload_row)
            .optional()
            .map_err(db_error)
    }

    fn upload_by_blob(&self, blob_id: &str, account_id: &str) -> Result<Option<Upload>> {
        self.conn()
            .query_row(
                &format!("SELECT {UPLOAD_COLS} FROM uploads WHERE blob_id = ?1 AND account_id = ?2"),
                params![blob_id, account_id],
                upload_row,
            )
            .optional()
            .map_err(db_error)
    }

    fn move_upload(&self, id: &str, from: &str, to: &str, bytes: Option<i64>) -> Result<bool> {
        let n = self
            .conn()
            .execute(
                "UPDATE uploads SET state = ?3, bytes = COALESCE(?4, bytes) WHERE id = ?1 AND state = ?2",
                params![id, from, to, bytes],
            )
            .map_err(db_error)?;
        Ok(n == 1)
    }

    fn expire_uploads(&self, now: i64) -> Result<Vec<Upload>> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(db_error)?;
        let list = {
            let mut st = tx
                .prepare(&format!(
                    "SELECT {UPLOAD_COLS} FROM uploads WHERE state IN ('pending', 'receiving', 'stored') AND expires_at <= ?1"
                ))
                .map_err(db_error)?;
            st.query_map([now], upload_row)
                .map_err(db_error)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(db_error)?
        };
        tx.execute(
            "UPDATE uploads SET state = 'expired' WHERE state IN ('pending', 'receiving', 'stored') AND expires_at <= ?1",
            [now],
        )
        .map_err(db_error)?;
        tx.commit().map_err(db_error)?;
        Ok(list)
    }

    fn charge_and_queue(&self, job: &Job, allowance: i64, period: i64, reason: &str) -> Result<Charge> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_error)?;
        let charged = charge_in(&tx, &job.account_id, job.credits, allowance, period, reason, &job.id, job.created_at)?;
        if let Charge::Charged { .. } = charged {
            tx.execute(
                &format!("INSERT INTO jobs ({JOB_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, NULL, NULL)"),
                params![
                    job.id,
                    job.account_id,
                    job.kind,
                    job.status,
                    job.params,
                    job.input,
                    job.webhook_url,
                    job.credits,
                    job.attempts,
                    job.result,
                    job.created_at,
                    job.updated_at
                ],
            )
            .map_err(db_error)?;
            tx.commit().map_err(db_error)?;
        }
        Ok(charged)
    }

    fn job(&self, id: &str, account_id: &str) -> Result<Option<Job>> {
        self.conn()
            .query_row(
                &format!("SELECT {JOB_COLS} FROM jobs WHERE id = ?1 AND account_id = ?2"),
                [id, account_id],
                job_row,
            )
            .optional()
            .map_err(db_error)
    }

    fn claim_job(&self, node: &str, now: i64, lease_until: i64) -> Result<Option<Claimed>> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_error)?;
        let job = tx
            .query_row(
                &format!(
                    "SELECT {JOB_COLS} FROM jobs WHERE status = 'queued' OR (status = 'processing' AND lease_until <= ?1)
                     ORDER BY created_at, id LIMIT 1"
                ),
                [now],
                job_row,
            )
            .optional()
            .map_err(db_error)?;
        let Some(mut job) = job else { return Ok(None) };
        tx.execute(
            "UPDATE jobs SET status = 'processing', attempts = attempts + 1, updated_at = ?2, lease_owner = ?3, lease_until = ?4 WHERE id = ?1",
            params![job.id, now, node, lease_until],
        )
        .map_err(db_error)?;
        tx.commit().map_err(db_error)?;
        let took_over = job.status == "processing";
        job.status = "processing".into();
        job.attempts += 1;
        job.updated_at = now;
        job.lease_owner = Some(node.into());
        job.lease_until = Some(lease_until);
        Ok(Some(Claimed { job, took_over }))
    }

    fn renew_lease(&self, id: &str, node: &str, lease_until: i64) -> Result<bool> {
        self.conn()
            .execute(
                "UPDATE jobs SET lease_until = ?3 WHERE id = ?1 AND lease_owner = ?2 AND status = 'processing'",
                params![id, node, lease_until],
            )
            .map(|n| n == 1)
            .map_err(db_error)
    }

    fn finish_job(&self, fin: &Finish<'_>) -> Result<bool> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_error)?;
        let n = tx
            .execute(
                "UPDATE jobs SET status = ?3, result = ?4, input = NULL, updated_at = ?5, lease_owner = NULL, lease_until = NULL
                 WHERE id = ?1 AND lease_owner = ?2 AND status = 'processing'",
                params![fin.id, fin.node, fin.status, fin.result, fin.now],
            )
            .map_err(db_error)?;
        if n != 1 {
            return Ok(false);
        }
        if let Some(reason) = fin.refund {
            refund_in(&tx, fin.id, reason, fin.now)?;
        }
        if let Some(d) = fin.delivery {
            insert_delivery_in(&tx, d, fin.now)?;
        }
        tx.commit().map_err(db_error)?;
        Ok(true)
    }

    fn release_job(&self, id: &str, node: &str, now: i64) -> Result<bool> {
        self.conn()
            .execute(
                "UPDATE jobs SET status = 'queued', updated_at = ?3, lease_owner = NULL, lease_until = NULL
                 WHERE id = ?1 AND lease_owner = ?2 AND status = 'processing'",
                params![id, node, now],
            )
            .map(|n| n == 1)
            .map_err(db_error)
    }

    fn release_expired_leases(&self, now: i64) -> Result<Vec<String>> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_error)?;
        let ids: Vec<String> = {
            let mut st = tx
                .prepare("SELECT id FROM jobs WHERE status = 'processing' AND lease_until <= ?1 ORDER BY created_at")
                .map_err(db_error)?;
            st.query_map([now], |r| r.get(0)).map_err(db_error)?.collect::<rusqlite::Result<_>>().map_err(db_error)?
        };
        tx.execute(
            "UPDATE jobs SET status = 'queued', updated_at = ?1, lease_owner = NULL, lease_until = NULL
             WHERE status = 'processing' AND lease_until <= ?1",
            [now],
        )
        .map_err(db_error)?;
        tx.commit().map_err(db_error)?;
        Ok(ids)
    }

    fn requeue_job(&self, id: &str, now: i64) -> Result<()> {
        self.conn()
            .execute(
                "UPDATE jobs SET status = 'queued', updated_at = ?2, lease_owner = NULL, lease_until = NULL
                 WHERE id = ?1 AND status = 'processing'",
                params![id, now],
            )
            .map(|_| ())
            .map_err(db_error)
    }

    fn interrupted_jobs(&self) -> Result<Vec<Job>> {
        let conn = self.conn();
        let mut st = conn
            .prepare(&format!("SELECT {JOB_COLS} FROM jobs WHERE status = 'processing' ORDER BY created_at"))
            .map_err(db_error)?;
        st.query_map([], job_row).map_err(db_error)?.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    fn job_counts(&self) -> Result<Vec<(String, i64)>> {
        let conn = self.conn();
        let mut st =
            conn.prepare("SELECT status, COUNT(*) FROM jobs GROUP BY status ORDER BY status").map_err(db_error)?;
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_error)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_error)
    }

    fn live_blobs(&self) -> Result<Vec<String>> {
        let conn = self.conn();
        let mut st = conn
            .prepare(
                "SELECT input FROM jobs WHERE input IS NOT NULL AND status IN ('queued', 'processing')
                 UNION SELECT blob_id FROM uploads WHERE state = 'stored'",
            )
            .map_err(db_error)?;
        st.query_map([], |r| r.get(0)).map_err(db_error)?.collect::<rusqlite::Result<_>>().map_err(db_error)
    }

    fn insert_delivery(&self, d: &Delivery, now: i64) -> Result<()> {
        insert_delivery_in(&self.conn(), d, now)
    }

    fn claim_deliveries(&self, now: i64, limit: usize, hold_until: i64) -> Result<Vec<Delivery>> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_error)?;
        let mut due: Vec<Delivery> = {
            let mut st = tx
                .prepare(&format!(
                    "SELECT {DELIVERY_COLS} FROM webhook_deliveries WHERE state = 'pending' AND next_at <= ?1 ORDER BY next_at LIMIT ?2"
                ))
                .map_err(db_error)?;
            st.query_map(params![now, limit as i64], delivery_row)
                .map_err(db_error)?
                .collect::<rusqlite::Result<_>>()
                .map_err(db_error)?
        };
        for d in &mut due {
            tx.execute("UPDATE webhook_deliveries SET next_at = ?2 WHERE id = ?1", params![d.id, hold_until])
                .map_err(db_error)?;
            d.next_at = hold_until;
        }
        tx.commit().map_err(db_error)?;
        Ok(due)
    }

    fn update_delivery(&self, id: &str, state: &str, attempts: i64, next_at: i64, status: Option<i64>) -> Result<()> {
        self.conn()
            .execute(
                "UPDATE webhook_deliveries SET state = ?2, attempts = ?3, next_at = ?4, last_status = ?5 WHERE id = ?1",
                params![id, state, attempts, next_at, status],
            )
            .map(|_| ())
            .map_err(db_error)
    }

    fn put_shots(&self, shots: &[Shot]) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(db_error)?;
        for s in shots {
            tx.execute(
                &format!("INSERT INTO screenshots ({SHOT_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
                params![s.id, s.owner_id, s.account_id, s.name, s.ext, s.rv, s.rh, s.size, s.created_at, s.expires_at],
            )
            .map_err(db_error)?;
        }
        tx.commit().map_err(db_error)
    }

    fn shot(&self, id: &str) -> Result<Option<Shot>> {
        self.conn()
            .query_row(&format!("SELECT {SHOT_COLS} FROM screenshots WHERE id = ?1"), [id], shot_row)
            .optional()
            .map_err(db_error)
    }

    fn shots_of(&self, owner_id: &str, account_id: &str) -> Result<Vec<Shot>> {
        let conn = self.conn();
        let mut st = conn
            .prepare(&format!(
                "SELECT {SHOT_COLS} FROM screenshots WHERE owner_id = ?1 AND account_id = ?2 ORDER BY rowid"
            ))
            .map_err(db_error)?;
        st.query_map(params![owner_id, account_id], shot_row)
            .map_err(db_error)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_error)
    }

    fn expire_shots(&self, now: i64) -> Result<Vec<Shot>> {
        self.take_shots("expires_at <= ?1", &now)
    }

    fn delete_shots_of(&self, owner_id: &str) -> Result<Vec<Shot>> {
        self.take_shots("owner_id = ?1", &owner_id)
    }

    fn setting_or_insert(&self, key: &str, value: &str) -> Result<String> {
        let conn = self.conn();
        conn.execute("INSERT OR IGNORE INTO settings (key, value) VALUES (?1, ?2)", params![key, value])
            .map_err(db_error)?;
        conn.query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| r.get(0)).map_err(db_error)
    }

    fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        self.conn()
            .execute(
                "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![key, value],
            )
            .map(|_| ())
            .map_err(db_error)
    }

    fn set_billing(
        &self,
        account_id: &str,
        plan: &str,
        customer_id: Option<&str>,
        provider: Option<&str>,
        subscription_id: Option<&str>,
    ) -> Result<bool> {
        self.conn()
            .execute(
                "UPDATE accounts SET plan = ?2, customer_id = COALESCE(?3, customer_id), subscription_provider = ?4, subscription_id = ?5 WHERE id = ?1",
                params![account_id, plan, customer_id, provider, subscription_id],
            )
            .map(|n| n > 0)
            .map_err(db_error)
    }

    fn account_by_billing(&self, customer_id: Option<&str>, subscription_id: Option<&str>) -> Result<Option<Account>> {
        self.conn()
            .query_row(
                &format!(
                    "SELECT {ACCOUNT_COLS} FROM accounts WHERE (?1 IS NOT NULL AND subscription_id = ?1) OR (?2 IS NOT NULL AND customer_id = ?2) ORDER BY (subscription_id = ?1) DESC LIMIT 1"
                ),
                params![subscription_id, customer_id],
                account_row,
            )
            .optional()
            .map_err(db_error)
    }

    fn first_billing_event(&self, id: &str, kind: &str, now: i64) -> Result<bool> {
        self.conn()
            .execute(
                "INSERT OR IGNORE INTO billing_events (id, type, received_at) VALUES (?1, ?2, ?3)",
                params![id, kind, now],
            )
            .map(|n| n == 1)
            .map_err(db_error)
    }

    fn update_bucket(&self, key: &str, update: &mut (dyn FnMut(Option<Bucket>) -> Bucket + Send)) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_error)?;
        let old = tx
            .query_row("SELECT units, at_ms FROM rate_buckets WHERE key = ?1", [key], |r| {
                Ok(Bucket { units: r.get(0)?, at_ms: r.get(1)? })
            })
            .optional()
            .map_err(db_error)?;
        let new = update(old);
        tx.execute(
            "INSERT INTO rate_buckets (key, units, at_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT(key) DO UPDATE SET units = excluded.units, at_ms = excluded.at_ms",
            params![key, new.units, new.at_ms],
        )
        .map_err(db_error)?;
        tx.commit().map_err(db_error)
    }

    fn prune_buckets(&self, before_ms: i64) -> Result<usize> {
        self.conn().execute("DELETE FROM rate_buckets WHERE at_ms < ?1", [before_ms]).map_err(db_error)
    }

    fn exclusive(&self, _name: &str, work: &mut (dyn FnMut() + Send)) -> Result<bool> {
        // One process owns the file: nothing else can be running the work.
        work();
        Ok(true)
    }

    fn shared(&self) -> bool {
        false
    }

    fn listen_jobs(&self, _wake: Box<dyn Fn() + Send + Sync>) -> Result<()> {
        Ok(())
    }
}

/// Charges inside the caller's transaction: a ledger row when the period's
/// balance covers `credits`.
#[allow(clippy::too_many_arguments)]
fn charge_in(
    tx: &Connection,
    account_id: &str,
    credits: i64,
    allowance: i64,
    period: i64,
    reason: &str,
    reference: &str,
    now: i64,
) -> Result<Charge> {
    let balance = allowance - used(tx, account_id, period)?;
    if balance < credits {
        return Ok(Charge::Insufficient { balance: balance.max(0), required: credits });
    }
    tx.execute(
        "INSERT INTO ledger (account_id, at, period, credits, reason, reference) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![account_id, now, period, credits, reason, reference],
    )
    .map_err(db_error)?;
    Ok(Charge::Charged { balance: balance - credits })
}

/// Refunds what is still charged under `reference`, inside the caller's transaction.
fn refund_in(tx: &Connection, reference: &str, reason: &str, now: i64) -> Result<i64> {
    let row: Option<(String, i64, i64)> = tx
        .query_row(
            "SELECT account_id, MIN(period), SUM(credits) FROM ledger WHERE reference = ?1 GROUP BY account_id",
            [reference],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .map_err(db_error)?;
    let Some((account_id, period, outstanding)) = row else { return Ok(0) };
    if outstanding <= 0 {
        return Ok(0);
    }
    tx.execute(
        "INSERT INTO ledger (account_id, at, period, credits, reason, reference) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![account_id, now, period, -outstanding, reason, reference],
    )
    .map_err(db_error)?;
    Ok(outstanding)
}

fn insert_delivery_in(conn: &Connection, d: &Delivery, now: i64) -> Result<()> {
    conn.execute(
        "INSERT INTO webhook_deliveries (id, job_id, account_id, url, body, state, attempts, next_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![d.id, d.job_id, d.account_id, d.url, d.body, d.state, d.attempts, d.next_at, now],
    )
    .map(|_| ())
    .map_err(db_error)
}

fn used(conn: &Connection, account_id: &str, period: i64) -> Result<i64> {
    conn.query_row(
        "SELECT COALESCE(SUM(credits), 0) FROM ledger WHERE account_id = ?1 AND period = ?2",
        params![account_id, period],
        |r| r.get(0),
    )
    .map_err(db_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_keys_and_the_ledger() {
        let s = SqliteStore::in_memory().unwrap();
        let (acct, key) = s.create_account("free", Some("a@example.com"), 1000).unwrap();
        assert_eq!(s.account_for_key(&key).unwrap().unwrap(), acct);
        assert!(s.account_for_key("mk_live_nope").unwrap().is_none());
        assert_eq!(s.charge(&acct.id, 2, 3, 1000, "validate", "r1", 1001).unwrap(), Charge::Charged { balance: 1 });
        assert_eq!(
            s.charge(&acct.id, 2, 3, 1000, "validate", "r2", 1002).unwrap(),
            Charge::Insufficient { balance: 1, required: 2 }
        );
        assert_eq!(s.refund("r1", "internal", 1003).unwrap(), 2);
        assert_eq!(s.refund("r1", "internal", 1004).unwrap(), 0, "idempotent");
        assert_eq!(s.credits_used(&acct.id, 1000).unwrap(), 0);
        assert_eq!(s.ledger(&acct.id, 1000).unwrap().len(), 2);
        let k2 = s.create_key(&acct.id, crate::store::LIVE_KEY_PREFIX, 1005).unwrap();
        assert_eq!(s.revoke_key(&key, 1006).unwrap(), 1);
        assert!(s.account_for_key(&key).unwrap().is_none());
        assert_eq!(s.revoke_key(&k2[..12], 1006).unwrap(), 1);
        assert!(s.account_for_key(&k2).unwrap().is_none());
        assert_eq!(s.keys(&acct.id).unwrap().len(), 2);
        assert_eq!(s.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn reports_expire_to_tombstones() {
        let s = SqliteStore::in_memory().unwrap();
        s.put_report("rep_1", "acct_a", 0, 100, "{}").unwrap();
        assert_eq!(s.report("rep_1", "acct_a").unwrap(), ReportLookup::Found("{}".into()));
        assert_eq!(s.report("rep_1", "acct_b").unwrap(), ReportLookup::Missing);
        assert_eq!(s.expire_reports(99).unwrap(), 0);
        assert_eq!(s.expire_reports(100).unwrap(), 1);
        assert_eq!(s.report("rep_1", "acct_a").unwrap(), ReportLookup::Expired);
        assert_eq!(s.report("rep_1", "acct_b").unwrap(), ReportLookup::Missing);
    }

    #[test]
    fn migrations_apply_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.sqlite");
        drop(SqliteStore::open(&path).unwrap());
        let s = SqliteStore::open(&path).unwrap();
        assert_eq!(s.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn a_job_is_charged_and_queued_together_or_not_at_all() {
        let s = SqliteStore::in_memory().unwrap();
        let (acct, _) = s.create_account("free", None, 0).unwrap();
        let job = |id: &str, credits: i64| Job {
            id: id.into(),
            account_id: acct.id.clone(),
            kind: "validate".into(),
            status: "queued".into(),
            params: "{}".into(),
            input: Some("blob_1".into()),
            webhook_url: None,
            credits,
            attempts: 0,
            lease_owner: None,
            lease_until: None,
            result: None,
            created_at: 10,
            updated_at: 10,
        };
        assert_eq!(
            s.charge_and_queue(&job("job_1", 2), 3, 0, "validate (job)").unwrap(),
            Charge::Charged { balance: 1 }
        );
        assert_eq!(s.job("job_1", &acct.id).unwrap().unwrap().credits, 2);
        assert_eq!(
            s.charge_and_queue(&job("job_2", 2), 3, 0, "validate (job)").unwrap(),
            Charge::Insufficient { balance: 1, required: 2 }
        );
        assert!(s.job("job_2", &acct.id).unwrap().is_none(), "no job without its charge");
        assert_eq!(s.ledger(&acct.id, 0).unwrap().len(), 1);
        assert!(s.charge_and_queue(&job("job_1", 1), 3, 0, "dup").is_err(), "a duplicate id");
        assert_eq!(s.ledger(&acct.id, 0).unwrap().len(), 1, "the failed insert took its charge back");
    }

    #[test]
    fn shots_settings_and_billing() {
        let s = SqliteStore::in_memory().unwrap();
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
        s.put_shots(&[shot("shot_1", "rpt_1", 100), shot("shot_2", "rpt_1", 100), shot("shot_3", "rnd_1", 200)])
            .unwrap();
        assert_eq!(s.shots_of("rpt_1", "acct_a").unwrap().len(), 2);
        assert!(s.shots_of("rpt_1", "acct_b").unwrap().is_empty());
        assert_eq!(s.shot("shot_3").unwrap().unwrap().rh, 90.0);
        assert_eq!(s.expire_shots(150).unwrap().len(), 2);
        assert!(s.shot("shot_1").unwrap().is_none());
        assert_eq!(s.delete_shots_of("rnd_1").unwrap().len(), 1);
        assert_eq!(s.setting_or_insert("k", "first").unwrap(), "first");
        assert_eq!(s.setting_or_insert("k", "second").unwrap(), "first");
        s.set_setting("k", "third").unwrap();
        assert_eq!(s.setting_or_insert("k", "x").unwrap(), "third");
        let (acct, _) = s.create_account("free", None, 0).unwrap();
        assert!(s.set_billing(&acct.id, "indie", Some("cus_1"), Some("stripe"), Some("sub_1")).unwrap());
        assert_eq!(s.account_by_billing(None, Some("sub_1")).unwrap().unwrap().plan, "indie");
        assert_eq!(s.account_by_billing(Some("cus_1"), None).unwrap().unwrap().id, acct.id);
        assert!(s.account_by_billing(Some("cus_2"), Some("sub_2")).unwrap().is_none());
        assert!(s.set_billing(&acct.id, "free", None, None, None).unwrap());
        let a = s.account(&acct.id).unwrap().unwrap();
        assert_eq!((a.customer_id.as_deref(), a.subscription_id), (Some("cus_1"), None), "the customer stays");
        assert!(s.first_billing_event("evt_1", "x", 0).unwrap());
        assert!(!s.first_billing_event("evt_1", "x", 1).unwrap());
    }
}
