-- 001 (PostgreSQL): the schema of SQLite's migrations 001-003 in one step.
-- Times are Unix seconds (UTC) unless named _ms.

CREATE TABLE accounts (
    id                    TEXT PRIMARY KEY,
    email                 TEXT,
    plan                  TEXT NOT NULL,
    webhook_secret        TEXT NOT NULL,
    created_at            BIGINT NOT NULL,
    customer_id           TEXT,
    subscription_provider TEXT,
    subscription_id       TEXT
);
CREATE INDEX accounts_customer ON accounts(customer_id);
CREATE INDEX accounts_subscription ON accounts(subscription_id);

CREATE TABLE api_keys (
    hash       TEXT PRIMARY KEY,
    prefix     TEXT NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX api_keys_account ON api_keys(account_id);
CREATE INDEX api_keys_prefix ON api_keys(prefix);

CREATE TABLE ledger (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    at         BIGINT NOT NULL,
    period     BIGINT NOT NULL,
    credits    BIGINT NOT NULL,
    reason     TEXT NOT NULL,
    reference  TEXT NOT NULL
);
CREATE INDEX ledger_account_period ON ledger(account_id, period);
CREATE INDEX ledger_reference ON ledger(reference);

CREATE TABLE reports (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX reports_expiry ON reports(expires_at);

CREATE TABLE report_tombstones (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    expired_at BIGINT NOT NULL
);

CREATE TABLE uploads (
    id         TEXT PRIMARY KEY,
    blob_id    TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL,
    state      TEXT NOT NULL,
    bytes      BIGINT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX uploads_expiry ON uploads(state, expires_at);

-- A processing job belongs to `lease_owner` until `lease_until`.
CREATE TABLE jobs (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL,
    params      TEXT NOT NULL,
    input       TEXT,
    webhook_url TEXT,
    credits     BIGINT NOT NULL,
    attempts    BIGINT NOT NULL DEFAULT 0,
    result      TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT
);
CREATE INDEX jobs_status ON jobs(status, created_at);

-- The webhook outbox: one row per message, written with the job's finish.
CREATE TABLE webhook_deliveries (
    id          TEXT PRIMARY KEY,
    job_id      TEXT NOT NULL,
    account_id  TEXT NOT NULL,
    url         TEXT NOT NULL,
    body        TEXT NOT NULL,
    state       TEXT NOT NULL,
    attempts    BIGINT NOT NULL DEFAULT 0,
    next_at     BIGINT NOT NULL,
    last_status BIGINT,
    created_at  BIGINT NOT NULL
);
CREATE INDEX webhook_due ON webhook_deliveries(state, next_at);

-- `seq` keeps insertion order (SQLite's rowid).
CREATE TABLE screenshots (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY,
    id         TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL,
    account_id TEXT NOT NULL,
    name       TEXT NOT NULL,
    ext        TEXT NOT NULL,
    rv         DOUBLE PRECISION NOT NULL,
    rh         DOUBLE PRECISION NOT NULL,
    size       BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX screenshots_owner ON screenshots(owner_id, account_id);
CREATE INDEX screenshots_expiry ON screenshots(expires_at);

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE billing_events (
    id          TEXT PRIMARY KEY,
    type        TEXT NOT NULL,
    received_at BIGINT NOT NULL
);

-- One row per token bucket shared by every node.
CREATE TABLE rate_buckets (
    key   TEXT PRIMARY KEY,
    units BIGINT NOT NULL,
    at_ms BIGINT NOT NULL
);
