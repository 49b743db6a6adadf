//! Report storage: the one path by which synchronous calls, jobs and the
//! demo keep a report (id, expiry, stills under signed URLs).

use super::state::AppState;
use crate::error::Error;

/// Stamps a report with its id and expiry, stores its stills (when given:
/// full mode with `screenshots`) under signed URLs, stores it for the
/// account and returns its JSON: the one path by which sync calls, jobs and
/// the demo keep reports. Nothing is left behind when storing fails.
pub fn store_report(
    st: &AppState,
    account_id: &str,
    report_id: &str,
    mut report: crate::report::Report,
    stills: Option<&crate::render::Rendered>,
    now: i64,
) -> crate::error::Result<String> {
    let expires = now + st.config.report_ttl_s;
    report.report_id = Some(report_id.to_string());
    report.expires_at = Some(super::clock::rfc3339(expires));
    if let Some(r) = stills {
        let owner = super::media::Owner { id: report_id, account_id, now, expires_at: expires };
        let shots = super::media::store_stills(st, &owner, &r.stills)?;
        report.screenshots = Some(
            r.stills
                .iter()
                .zip(&shots)
                .enumerate()
                .map(|(i, (still, shot))| crate::report::Screenshot {
                    url: Some(super::media::url(st, shot)),
                    ..still.screenshot(i)
                })
                .collect(),
        );
    }
    let stored = serde_json::to_string(&report)
        .map_err(|e| Error::internal(e.to_string()))
        .and_then(|body| st.store.put_report(report_id, account_id, now, expires, &body).map(|_| body));
    if stored.is_err() && stills.is_some() {
        super::media::delete_owner(st, report_id);
    }
    stored
}
