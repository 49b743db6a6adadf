-- 003: job leases (a processing job belongs to the node that claimed it
-- until `lease_until`, Unix seconds; the node renews it while it works and
-- another node takes the job over once it runs out) and token buckets
-- shared through the store (one row per bucket; `units` of 1/60,000 request).

ALTER TABLE jobs ADD COLUMN lease_owner TEXT;
ALTER TABLE jobs ADD COLUMN lease_until INTEGER;

CREATE TABLE rate_buckets (
    key   TEXT PRIMARY KEY,
    units INTEGER NOT NULL,
    at_ms INTEGER NOT NULL
);
