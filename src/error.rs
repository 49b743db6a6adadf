//! The engine's one error type, carrying the specification's error codes.
//!
//! Every failure the engine can report maps to one [`ErrorCode`] (the spec's
//! enumerated codes) and to a CLI exit code. The service turns the same value
//! into its `{"error": {code, message, detail}}` envelope, so the CLI and the
//! API agree on what went wrong and how it is spelled. Nothing here knows of
//! HTTP: the server maps each code to its status (`server/error.rs`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// The specification's error codes that the engine and CLI produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// A request or command line the engine cannot act on (CLI: usage error).
    BadRequest,
    /// Not a GLB, not a zip, not glTF JSON; or a zip bundle refused for safety.
    UnsupportedFormat,
    /// A GLB or .gltf whose container, JSON or data cannot be read as a document.
    MalformedGltf,
    /// A bundle with no .gltf/.glb, or whose buffers are missing.
    BundleIncomplete,
    /// The renderer is unavailable or failed.
    RenderFailed,
    /// The vision model is not configured, unreachable, or gave no valid answer.
    InspectUnavailable,
    /// A fault of ours, never a client mistake.
    Internal,
    /// Service: no `X-Api-Key` header.
    MissingApiKey,
    /// Service: the key is unknown or revoked.
    InvalidApiKey,
    /// Service: the balance does not cover the call (`detail`: balance, required).
    InsufficientCredits,
    /// Service: the rate limit is spent (`detail`: retry_after_s).
    RateLimited,
    /// The input is larger than the limit (`detail`: bytes, max_bytes).
    FileTooLarge,
    /// Service: the server could not fetch `url`.
    FetchFailed,
    /// Service: no such resource (for this account).
    NotFound,
    /// Service: no such job (for this account).
    JobNotFound,
    /// Service: the report is past its 30-day retention.
    ReportExpired,
    /// Service: billing is not configured.
    BillingUnavailable,
}

impl ErrorCode {
    /// The code as the specification spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "BAD_REQUEST",
            ErrorCode::UnsupportedFormat => "UNSUPPORTED_FORMAT",
            ErrorCode::MalformedGltf => "MALFORMED_GLTF",
            ErrorCode::BundleIncomplete => "BUNDLE_INCOMPLETE",
            ErrorCode::RenderFailed => "RENDER_FAILED",
            ErrorCode::InspectUnavailable => "INSPECT_UNAVAILABLE",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::MissingApiKey => "MISSING_API_KEY",
            ErrorCode::InvalidApiKey => "INVALID_API_KEY",
            ErrorCode::InsufficientCredits => "INSUFFICIENT_CREDITS",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::FileTooLarge => "FILE_TOO_LARGE",
            ErrorCode::FetchFailed => "FETCH_FAILED",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::JobNotFound => "JOB_NOT_FOUND",
            ErrorCode::ReportExpired => "REPORT_EXPIRED",
            ErrorCode::BillingUnavailable => "BILLING_UNAVAILABLE",
        }
    }

    /// The CLI exit code (DESIGN.md "Exit codes"): 2 usage, 3 input cannot be
    /// validated, 4 environment (renderer, validator, vision model).
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorCode::BadRequest | ErrorCode::FileTooLarge => 2,
            ErrorCode::UnsupportedFormat | ErrorCode::MalformedGltf | ErrorCode::BundleIncomplete => 3,
            ErrorCode::RenderFailed | ErrorCode::InspectUnavailable | ErrorCode::Internal => 4,
            // Service-only codes; the CLI never produces them.
            ErrorCode::MissingApiKey
            | ErrorCode::InvalidApiKey
            | ErrorCode::InsufficientCredits
            | ErrorCode::RateLimited
            | ErrorCode::FetchFailed
            | ErrorCode::NotFound
            | ErrorCode::JobNotFound
            | ErrorCode::ReportExpired
            | ErrorCode::BillingUnavailable => 4,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error with its code, one-sentence message, optional structured detail
/// and a hint telling the user what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    /// The specification's code.
    pub code: ErrorCode,
    /// One sentence, with the numbers in it.
    pub message: String,
    /// Structured detail (`{field, reason}` and the like), or `None`.
    pub detail: Option<Box<Value>>,
    /// What the user can do about it (shown by the CLI, not part of the envelope).
    pub help: Option<String>,
}

impl Error {
    /// A new error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error { code, message: message.into(), detail: None, help: None }
    }
    /// UNSUPPORTED_FORMAT.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::UnsupportedFormat, message)
    }
    /// MALFORMED_GLTF.
    pub fn malformed(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::MalformedGltf, message)
    }
    /// BUNDLE_INCOMPLETE.
    pub fn incomplete(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BundleIncomplete, message)
    }
    /// INTERNAL: a fault of ours.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
    /// BAD_REQUEST naming the field: `detail` is `{field, reason}`.
    pub fn field(field: &str, reason: &str, message: impl Into<String>) -> Self {
        Self::bad_request(message).with_detail(serde_json::json!({"field": field, "reason": reason}))
    }
    /// BAD_REQUEST (CLI: usage error, exit 2).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, message)
    }
    /// Attach structured detail.
    pub fn with_detail(mut self, detail: Value) -> Self {
        self.detail = Some(Box::new(detail));
        self
    }
    /// Attach a hint for the user.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
    /// Whether this is a refusal by the per-file decode budget (a
    /// hostile-input limit, which refuses the whole file) rather than a
    /// fault in one part of the document.
    pub fn is_decode_budget(&self) -> bool {
        self.detail.as_deref().and_then(|d| d.get("limit")).and_then(Value::as_str) == Some("decode_budget")
    }
    /// The service's error envelope: `{"error": {"code", "message", "detail"}}`.
    pub fn envelope(&self) -> Value {
        let mut inner = serde_json::Map::new();
        inner.insert("code".into(), Value::String(self.code.as_str().into()));
        inner.insert("message".into(), Value::String(self.message.clone()));
        if let Some(d) = &self.detail {
            inner.insert("detail".into(), (**d).clone());
        }
        let mut outer = serde_json::Map::new();
        outer.insert("error".into(), Value::Object(inner));
        Value::Object(outer)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

/// The engine's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
