-- 002: stored stills and turntables (files under DATA/screenshots, one row
-- each), server settings (the URL-signing key, the demo account), and the
-- billing events already applied. Render reports live in `reports` too
-- (ids `rnd_...`), so they expire to tombstones like validate reports.

-- `owner_id` is the report (rpt_), render (rnd_) or inspection (ins_) the
-- file belongs to; it expires with it. `ext` is png or gif.
CREATE TABLE screenshots (
    id         TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL,
    account_id TEXT NOT NULL,
    name       TEXT NOT NULL,
    ext        TEXT NOT NULL,
    rv         REAL NOT NULL,
    rh         REAL NOT NULL,
    size       INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX screenshots_owner ON screenshots(owner_id, account_id);
CREATE INDEX screenshots_expiry ON screenshots(expires_at);

CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- Stripe may deliver an event more than once; each id is applied once.
CREATE TABLE billing_events (
    id          TEXT PRIMARY KEY,
    type        TEXT NOT NULL,
    received_at INTEGER NOT NULL
);

CREATE INDEX accounts_customer ON accounts(customer_id);
CREATE INDEX accounts_subscription ON accounts(subscription_id);
