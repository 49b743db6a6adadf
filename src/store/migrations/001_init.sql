-- 001: accounts, keys, the credit ledger, reports and tombstones, uploads,
-- jobs and webhook deliveries. Times are Unix seconds (UTC).

CREATE TABLE accounts (
    id                    TEXT PRIMARY KEY,
    email                 TEXT,
    plan                  TEXT NOT NULL,
    webhook_secret        TEXT NOT NULL,
    created_at            INTEGER NOT NULL,
    customer_id           TEXT,
    subscription_provider TEXT,
    subscription_id       TEXT
);

-- Keys are stored as SHA-256 (hex) only; `prefix` (the first 12 characters)
-- lets people tell their keys apart.
CREATE TABLE api_keys (
    hash       TEXT PRIMARY KEY,
    prefix     TEXT NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX api_keys_account ON api_keys(account_id);

-- One row per charge (credits > 0) or refund (credits < 0). `period` is the
-- start of the monthly period the row counts against: a refund carries its
-- charge's period. balance = plan credits - sum(credits) over the period.
CREATE TABLE ledger (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    at         INTEGER NOT NULL,
    period     INTEGER NOT NULL,
    credits    INTEGER NOT NULL,
    reason     TEXT NOT NULL,
    reference  TEXT NOT NULL
);
CREATE INDEX ledger_account_period ON ledger(account_id, period);
CREATE INDEX ledger_reference ON ledger(reference);

CREATE TABLE reports (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX reports_expiry ON reports(expires_at);

-- What is left of an expired report: enough to answer 410, nothing of it.
CREATE TABLE report_tombstones (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    expired_at INTEGER NOT NULL
);

-- state: pending (URL issued), stored (bytes in the blob folder),
-- consumed (validated, bytes deleted), expired.
CREATE TABLE uploads (
    id         TEXT PRIMARY KEY,
    blob_id    TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL,
    state      TEXT NOT NULL,
    bytes      INTEGER,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX uploads_expiry ON uploads(state, expires_at);

-- status: queued, processing, done, failed. `input` names the transient
-- blob holding the bytes; `params` is the validated request as JSON.
CREATE TABLE jobs (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL,
    params      TEXT NOT NULL,
    input       TEXT,
    webhook_url TEXT,
    credits     INTEGER NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    result      TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX jobs_status ON jobs(status, created_at);

-- One row per webhook message; retried under the same id.
CREATE TABLE webhook_deliveries (
    id          TEXT PRIMARY KEY,
    job_id      TEXT NOT NULL,
    account_id  TEXT NOT NULL,
    url         TEXT NOT NULL,
    body        TEXT NOT NULL,
    state       TEXT NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_at     INTEGER NOT NULL,
    last_status INTEGER,
    created_at  INTEGER NOT NULL
);
CREATE INDEX webhook_due ON webhook_deliveries(state, next_at);
