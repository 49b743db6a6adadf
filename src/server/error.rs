//! One error type for every handler: [`ApiError`] wraps the engine's
//! [`Error`] (which carries the specification's code) and renders the
//! error envelope with DESIGN.md's status for that code. INTERNAL errors are
//! logged with their cause and answered with a generic message: internal
//! details never reach the client.

use crate::error::{Error, ErrorCode};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// An error answered as the specification's envelope.
#[derive(Debug)]
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(e)
    }
}

impl ApiError {
    /// An error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError(Error::new(code, message))
    }
    /// Attaches `detail`.
    pub fn detail(self, detail: serde_json::Value) -> ApiError {
        ApiError(self.0.with_detail(detail))
    }
    /// 413 FILE_TOO_LARGE with `{bytes, max_bytes}`.
    pub fn too_large(bytes: u64, max_bytes: u64, what: &str) -> ApiError {
        ApiError::new(ErrorCode::FileTooLarge, format!("{what} is {bytes} bytes; the limit is {max_bytes} bytes"))
            .detail(serde_json::json!({"bytes": bytes, "max_bytes": max_bytes}))
    }
    /// 404 NOT_FOUND.
    pub fn not_found(what: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::NotFound, what)
    }
    /// 500 INTERNAL, logging the cause.
    pub fn internal(cause: impl std::fmt::Display) -> ApiError {
        ApiError(Error::internal(cause.to_string()))
    }
}

/// The HTTP status the service answers `code` with (DESIGN.md "Service decisions").
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::BadRequest => StatusCode::BAD_REQUEST,
        ErrorCode::MissingApiKey | ErrorCode::InvalidApiKey => StatusCode::UNAUTHORIZED,
        ErrorCode::InsufficientCredits => StatusCode::PAYMENT_REQUIRED,
        ErrorCode::NotFound | ErrorCode::JobNotFound => StatusCode::NOT_FOUND,
        ErrorCode::ReportExpired => StatusCode::GONE,
        ErrorCode::FileTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::UnsupportedFormat => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ErrorCode::MalformedGltf | ErrorCode::BundleIncomplete | ErrorCode::FetchFailed => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::RenderFailed => StatusCode::BAD_GATEWAY,
        ErrorCode::InspectUnavailable | ErrorCode::BillingUnavailable => StatusCode::SERVICE_UNAVAILABLE,
    }
}

/// The envelope a client sees for `e`: INTERNAL loses its message and detail.
pub fn public_envelope(e: &Error) -> serde_json::Value {
    if e.code == ErrorCode::Internal {
        Error::internal("the server failed while handling this request; it has been logged").envelope()
    } else {
        e.envelope()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let e = self.0;
        if e.code == ErrorCode::Internal {
            tracing::error!(cause = %e.message, "internal error");
        }
        let status = status_of(e.code);
        let mut resp = (status, axum::Json(public_envelope(&e))).into_response();
        if e.code == ErrorCode::RateLimited
            && let Some(secs) = e.detail.as_ref().and_then(|d| d.get("retry_after_s")).and_then(|v| v.as_u64())
            && let Ok(v) = HeaderValue::from_str(&secs.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

/// Handler results.
pub type ApiResult<T> = std::result::Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_errors_hide_their_cause() {
        let e = Error::internal("database: disk I/O error at /var/lib/secret.sqlite");
        let env = public_envelope(&e);
        assert_eq!(env["error"]["code"], "INTERNAL");
        assert!(!env.to_string().contains("secret"));
        let e = Error::bad_request("profile `x` is unknown").with_detail(serde_json::json!({"field": "profile"}));
        assert_eq!(public_envelope(&e), e.envelope());
    }

    #[test]
    fn statuses_are_the_specifications() {
        let want = [
            (ErrorCode::BadRequest, 400),
            (ErrorCode::MissingApiKey, 401),
            (ErrorCode::InvalidApiKey, 401),
            (ErrorCode::InsufficientCredits, 402),
            (ErrorCode::NotFound, 404),
            (ErrorCode::JobNotFound, 404),
            (ErrorCode::ReportExpired, 410),
            (ErrorCode::FileTooLarge, 413),
            (ErrorCode::UnsupportedFormat, 415),
            (ErrorCode::MalformedGltf, 422),
            (ErrorCode::BundleIncomplete, 422),
            (ErrorCode::FetchFailed, 422),
            (ErrorCode::RateLimited, 429),
            (ErrorCode::Internal, 500),
            (ErrorCode::RenderFailed, 502),
            (ErrorCode::InspectUnavailable, 503),
            (ErrorCode::BillingUnavailable, 503),
        ];
        for (code, status) in want {
            assert_eq!(status_of(code).as_u16(), status, "{code}");
        }
    }
}
