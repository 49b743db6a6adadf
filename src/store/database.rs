//! Which [`Store`] serves: `--database` names it (`sqlite:PATH`, or
//! `postgres://...` for several nodes on one database); none is the data
//! folder's SQLite file.

use super::Store;
use super::postgres::PgStore;
use super::sqlite::SqliteStore;
use crate::error::{Error, Result};
use std::sync::Arc;

/// Opens the database named by `url` (`--database`): `sqlite:PATH`, or
/// `postgres://...` / `postgresql://...`; none is the data folder's
/// `meshcheck.sqlite`. The schema is brought up to date.
pub fn open(url: Option<&str>, data_dir: &std::path::Path) -> Result<Arc<dyn Store>> {
    match url.map(str::trim) {
        None | Some("") => Ok(Arc::new(SqliteStore::open(&data_dir.join("meshcheck.sqlite"))?)),
        Some(u) if u.starts_with("postgres://") || u.starts_with("postgresql://") => Ok(Arc::new(PgStore::open(u)?)),
        Some(u) if u.starts_with("sqlite:") => {
            let path = u.trim_start_matches("sqlite:").trim_start_matches("//");
            if path.is_empty() {
                return Err(Error::bad_request(
                    "--database sqlite: needs a path, as in sqlite:/var/lib/meshcheck/db.sqlite",
                ));
            }
            Ok(Arc::new(SqliteStore::open(std::path::Path::new(path))?))
        }
        Some(u) => Err(Error::bad_request(format!(
            "--database {u:?}: expected sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE"
        ))),
    }
}
