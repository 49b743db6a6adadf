//! The OpenAPI 3.1 description, built from the code: the report schemas
//! come from the Rust types (schemars, the same as schemas/), the error
//! codes from [`ErrorCode`], the plans from [`PLANS`](super::plan::PLANS),
//! the prices from [`PRICES`](super::prices::PRICES), the limits from
//! [`Config`](super::state::Config), the routes from one table here. A test
//! checks that every route of the router is described and that every
//! described route exists.

use super::prices::fill;
use crate::error::ErrorCode;
use serde_json::{Map, Value, json};

/// The schemas served at /v1/schema/{name}.json: the committed, generated
/// files (a test keeps them equal to what the code generates).
pub const SCHEMAS: &[(&str, &str)] = &[
    ("report", include_str!("../../schemas/report.json")),
    ("check_result", include_str!("../../schemas/check_result.json")),
    ("render_report", include_str!("../../schemas/render_report.json")),
    ("inspect_answer", include_str!("../../schemas/inspect_answer.json")),
    ("vis-001", include_str!("../../schemas/vis-001.json")),
    ("vis-002", include_str!("../../schemas/vis-002.json")),
    ("vis-003", include_str!("../../schemas/vis-003.json")),
];

/// Every error code the service answers with.
pub const ERROR_CODES: &[ErrorCode] = &[
    ErrorCode::MissingApiKey,
    ErrorCode::InvalidApiKey,
    ErrorCode::InsufficientCredits,
    ErrorCode::RateLimited,
    ErrorCode::BadRequest,
    ErrorCode::FileTooLarge,
    ErrorCode::FetchFailed,
    ErrorCode::UnsupportedFormat,
    ErrorCode::MalformedGltf,
    ErrorCode::BundleIncomplete,
    ErrorCode::NotFound,
    ErrorCode::JobNotFound,
    ErrorCode::ReportExpired,
    ErrorCode::RenderFailed,
    ErrorCode::InspectUnavailable,
    ErrorCode::Internal,
    ErrorCode::BillingUnavailable,
];

/// (method, path, operation id, summary, authenticated) of every route.
pub const ROUTES: &[(&str, &str, &str, &str, bool)] = &[
    ("post", "/v1/validate", "validate", "Validate an asset (file, url or blob_id)", true),
    ("post", "/v1/uploads", "beginUpload", "Start an upload for a large file", true),
    ("put", "/v1/uploads/{upload_id}", "putUpload", "Send the bytes of an upload (single use)", true),
    ("get", "/v1/jobs/{id}", "getJob", "Poll an async job", true),
    ("get", "/v1/reports/{id}", "getReport", "Fetch a stored report (30 days)", true),
    ("get", "/v1/account", "getAccount", "The account snapshot", true),
    ("post", "/v1/render", "render", "Render stills (or a turntable GIF) under the studio rig", true),
    ("post", "/v1/inspect", "inspect", "Ask a vision model about renders (non-deterministic)", true),
    ("post", "/v1/billing/checkout", "billingCheckout", "Start a Stripe Checkout for a plan", true),
    ("post", "/v1/billing/portal", "billingPortal", "Open the Stripe Customer Portal", true),
    ("post", "/v1/billing/webhook", "billingWebhook", "Stripe's signed events (called by Stripe)", false),
    ("get", "/v1/screenshots/{file}", "getScreenshot", "A stored still or turntable, by signed URL", false),
    ("get", "/v1/schema/{name}.json", "getSchema", "A JSON Schema (draft 2020-12)", false),
    ("get", "/v1/openapi.json", "getOpenApi", "This document", false),
    ("get", "/llms.txt", "getLlmsTxt", "Plain-text orientation for language models", false),
    ("get", "/healthz", "health", "Liveness and readiness", false),
    ("get", "/", "demoPage", "The demo page (drag and drop)", false),
    ("post", "/demo/validate", "demoValidate", "Validate a file on the demo account (no key)", false),
];

/// Moves `$defs` of a schemars schema into `defs` and points its `$ref`s at
/// `#/components/schemas/`.
fn hoist(mut schema: Value, defs: &mut Map<String, Value>) -> Value {
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        if let Some(Value::Object(d)) = obj.remove("$defs") {
            for (k, v) in d {
                let v = hoist(v, defs);
                defs.insert(k, v);
            }
        }
    }
    rewrite_refs(&mut schema);
    schema
}

fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref")
                && let Some(name) = r.strip_prefix("#/$defs/")
            {
                *r = format!("#/components/schemas/{name}");
            }
            m.values_mut().for_each(rewrite_refs);
        }
        Value::Array(a) => a.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn rate_headers() -> Value {
    json!({
        "RateLimit-Limit": {"description": "Requests allowed per minute (bucket capacity).", "schema": {"type": "integer"}},
        "RateLimit-Remaining": {"description": "Requests left in the bucket.", "schema": {"type": "integer"}},
        "RateLimit-Reset": {"description": "Seconds until the bucket is full again.", "schema": {"type": "integer"}},
    })
}

fn error_response(codes: &[ErrorCode]) -> Value {
    let names: Vec<&str> = codes.iter().map(|c| c.as_str()).collect();
    let mut headers = rate_headers();
    if codes.contains(&ErrorCode::RateLimited)
        && let Some(h) = headers.as_object_mut()
    {
        h.insert(
            "Retry-After".into(),
            json!({"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}),
        );
    }
    json!({
        "description": format!("Error: {}.", names.join(", ")),
        "headers": headers,
        "content": {"application/json": {"schema": schema_ref("Error")}},
    })
}

fn ok_json(description: &str, schema: Value) -> Value {
    json!({"description": description, "headers": rate_headers(), "content": {"application/json": {"schema": schema}}})
}

/// The error responses of a route, by status.
fn errors_for(op: &str, authed: bool) -> Vec<(u16, Vec<ErrorCode>)> {
    use ErrorCode::*;
    let mut out: Vec<(u16, Vec<ErrorCode>)> = Vec::new();
    if authed {
        out.push((401, vec![MissingApiKey, InvalidApiKey]));
    }
    out.push((429, vec![RateLimited]));
    out.push((500, vec![Internal]));
    // What an engine call on a file, url or blob_id can answer.
    let input_errors = [
        (400, vec![BadRequest]),
        (402, vec![InsufficientCredits]),
        (404, vec![NotFound]),
        (413, vec![FileTooLarge]),
        (415, vec![UnsupportedFormat]),
        (422, vec![MalformedGltf, BundleIncomplete, FetchFailed]),
        (502, vec![RenderFailed]),
    ];
    match op {
        "validate" | "render" => out.extend(input_errors),
        "putUpload" => {
            out.push((400, vec![BadRequest]));
            out.push((404, vec![NotFound]));
            out.push((413, vec![FileTooLarge]));
        }
        "getJob" => out.push((404, vec![JobNotFound])),
        "getReport" => {
            out.push((404, vec![NotFound]));
            out.push((410, vec![ReportExpired]));
        }
        "getSchema" => out.push((404, vec![NotFound])),
        "inspect" => {
            out.extend(input_errors);
            out.push((410, vec![ReportExpired]));
            out.push((503, vec![InspectUnavailable]));
        }
        "billingCheckout" => {
            out.push((400, vec![BadRequest]));
            out.push((503, vec![BillingUnavailable]));
        }
        "billingPortal" => {
            out.push((404, vec![NotFound]));
            out.push((503, vec![BillingUnavailable]));
        }
        "billingWebhook" => {
            out.push((400, vec![BadRequest]));
            out.push((413, vec![FileTooLarge]));
            out.push((503, vec![BillingUnavailable]));
        }
        "getScreenshot" => {
            out.push((404, vec![NotFound]));
            out.push((410, vec![ReportExpired]));
        }
        "demoValidate" => out.extend(input_errors.into_iter().filter(|(status, _)| *status != 404)),
        _ => {}
    }
    out.sort_by_key(|(s, _)| *s);
    out
}

fn options_properties(multipart: bool) -> Map<String, Value> {
    let keys = crate::checks::catalog::default_profile().override_keys();
    let mut p = Map::new();
    p.insert(
        "profile".into(),
        json!({"type": "string", "enum": crate::profile::BUILTIN_NAMES, "default": "web", "description": "Budget profile."}),
    );
    p.insert(
        "mode".into(),
        json!({"type": "string", "enum": ["checks_only", "full"], "default": "checks_only", "description": fill("full also runs the renderer (RND checks) and costs {price:validate_full} credits.")}),
    );
    let overrides = json!({
        "type": "object",
        "description": format!("Budget overrides, key to number. Keys: {}.", keys.join(", ")),
        "propertyNames": {"enum": keys},
        "additionalProperties": {"type": "number"},
    });
    if multipart {
        p.insert(
            "overrides".into(),
            json!({"type": "string", "description": "A JSON object of budget overrides (key to number)."}),
        );
    } else {
        p.insert("overrides".into(), overrides);
    }
    p.insert("screenshots".into(), json!({"type": "boolean", "default": false, "description": "mode full only (400 otherwise): the six standard stills are stored for 30 days and listed in the report's screenshots with signed URLs."}));
    p.insert(
        "weld_tolerance".into(),
        json!({"type": "number", "minimum": 0, "maximum": 1, "description": "Weld tolerance in metres (0 to 1)."}),
    );
    p.insert(
        "webhook_url".into(),
        json!({"type": "string", "format": "uri", "description": "Async calls only: where the finished job is POSTed (signed)."}),
    );
    p
}

fn components() -> Value {
    let mut schemas = Map::new();
    let report =
        hoist(serde_json::to_value(schemars::schema_for!(crate::report::Report)).unwrap_or_default(), &mut schemas);
    schemas.insert("Report".into(), report);
    let check = hoist(
        serde_json::to_value(schemars::schema_for!(crate::report::CheckResult)).unwrap_or_default(),
        &mut schemas,
    );
    schemas.insert("CheckResult".into(), check);
    let render = hoist(
        serde_json::to_value(schemars::schema_for!(crate::report::RenderReport)).unwrap_or_default(),
        &mut schemas,
    );
    schemas.insert("RenderReport".into(), render);
    let answer = hoist(
        serde_json::to_value(schemars::schema_for!(crate::vision::InspectAnswer)).unwrap_or_default(),
        &mut schemas,
    );
    schemas.insert("InspectAnswer".into(), answer);
    let input_props = |multipart: bool| -> Map<String, Value> {
        let mut p = Map::new();
        if multipart {
            p.insert("file".into(), json!({"type": "string", "contentMediaType": "application/octet-stream", "description": "A .glb, or a .zip bundle holding a .gltf and its resources."}));
        }
        p.insert("url".into(), json!({"type": "string", "format": "uri", "description": "Fetched by the server: http(s), up to 25 MB, 10 s, public addresses only."}));
        p.insert("blob_id".into(), json!({"type": "string", "description": "From POST /v1/uploads, after its PUT."}));
        p
    };
    let angle = json!({"type": "object", "required": ["rv", "rh"], "additionalProperties": false, "properties": {
        "rv": {"type": "number", "minimum": -90, "maximum": 90, "description": "Elevation, degrees."},
        "rh": {"type": "number", "minimum": 0, "maximum": 360, "description": "Azimuth around +Y from the front (+Z) towards +X, degrees."}}});
    let turntable = json!({"type": "object", "additionalProperties": false, "properties": {
        "frames": {"type": "integer", "minimum": 8, "maximum": 120, "default": 36},
        "format": {"type": "string", "enum": ["gif"], "default": "gif"},
        "size": {"type": "integer", "minimum": 128, "maximum": 1024, "default": 512}}});
    for multipart in [false, true] {
        let mut p = input_props(multipart);
        let text = |desc: &str| json!({"type": "string", "description": desc});
        if multipart {
            p.insert("angles".into(), text("A JSON array of 1 to 12 {rv, rh}; omitted: the six standard views."));
            p.insert(
                "turntable".into(),
                text("A JSON object {frames 8..120, format gif, size 128..1024}: always a job."),
            );
        } else {
            p.insert("angles".into(), json!({"type": "array", "minItems": 1, "maxItems": 12, "items": angle}));
            p.insert("turntable".into(), turntable.clone());
        }
        p.insert("size".into(), json!({"type": "integer", "minimum": 128, "maximum": 1024, "default": 1024}));
        p.insert(
            "background".into(),
            json!({"type": "string", "pattern": "^(#[0-9A-Fa-f]{6}|transparent)$", "default": "#F2F2F2"}),
        );
        p.insert("lighting".into(), json!({"type": "string", "enum": ["studio"], "default": "studio"}));
        p.insert(
            "webhook_url".into(),
            json!({"type": "string", "format": "uri", "description": "Jobs only (turntables, inputs above 20 MB)."}),
        );
        let name = if multipart { "RenderMultipart" } else { "RenderJson" };
        let mut schema = json!({"type": "object", "additionalProperties": false, "properties": p});
        if multipart {
            schema["required"] = json!(["file"]);
        } else {
            schema["oneOf"] = json!([{"required": ["url"], "not": {"required": ["blob_id"]}}, {"required": ["blob_id"], "not": {"required": ["url"]}}]);
        }
        schemas.insert(name.into(), schema);

        let mut p = input_props(multipart);
        if !multipart {
            p.insert("render_id".into(), json!({"type": "string", "description": "A render (rnd_) or a full validate with screenshots (rpt_): its stored stills are shown to the model."}));
        }
        p.insert("check".into(), json!({"type": "string", "enum": ["VIS-001", "VIS-002", "VIS-003"]}));
        p.insert("prompt".into(), json!({"type": "string", "minLength": 1, "maxLength": 2000, "description": "VIS-001 only, required there: what the asset should be."}));
        p.insert("question".into(), json!({"type": "string", "minLength": 1, "maxLength": 2000, "description": "VIS-003 only, required there."}));
        let name = if multipart { "InspectMultipart" } else { "InspectJson" };
        let required = if multipart { json!(["file", "check"]) } else { json!(["check"]) };
        schemas.insert(
            name.into(),
            json!({"type": "object", "additionalProperties": false, "required": required, "properties": p,
                "description": "Exactly one input (file, url, blob_id or render_id); prompt with VIS-001 only, question with VIS-003 only."}),
        );
    }
    schemas.insert(
        "CheckoutRequest".into(),
        json!({"type": "object", "required": ["plan"], "additionalProperties": false, "properties": {
            "plan": {"type": "string", "enum": ["indie", "studio", "scale"]}}}),
    );
    schemas.insert(
        "SessionUrl".into(),
        json!({"type": "object", "required": ["url"], "properties": {"url": {"type": "string", "format": "uri"}}}),
    );
    schemas.insert(
        "DemoMultipart".into(),
        json!({"type": "object", "required": ["file"], "additionalProperties": false, "properties": {
            "file": {"type": "string", "contentMediaType": "application/octet-stream", "description": "A .glb or .zip bundle, up to 4,400,000 bytes."},
            "profile": {"type": "string", "enum": crate::profile::BUILTIN_NAMES, "default": "web"}}}),
    );
    let codes: Vec<&str> = ERROR_CODES.iter().map(|c| c.as_str()).collect();
    schemas.insert(
        "Error".into(),
        json!({
            "type": "object",
            "required": ["error"],
            "properties": {"error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string", "enum": codes},
                    "message": {"type": "string"},
                    "detail": {"description": "Structured detail: {balance, required} for INSUFFICIENT_CREDITS, {bytes, max_bytes} for FILE_TOO_LARGE, {retry_after_s} for RATE_LIMITED, {field, reason} for validation errors."},
                },
            }},
        }),
    );
    schemas.insert(
        "JobEnvelope".into(),
        json!({
            "type": "object",
            "required": ["job_id", "status", "poll", "result"],
            "properties": {
                "job_id": {"type": "string"},
                "status": {"type": "string", "enum": ["queued", "processing", "done", "failed"]},
                "poll": {"type": "string", "description": "Relative poll path /v1/jobs/{id}."},
                "result": {"description": "Null while queued or processing; the report (validate) or render report (render) when done; the error envelope when failed.",
                    "anyOf": [{"type": "null"}, schema_ref("Report"), schema_ref("RenderReport"), schema_ref("Error")]},
            },
        }),
    );
    schemas.insert(
        "UploadBegin".into(),
        json!({"type": "object", "required": ["blob_id", "upload_url", "max_bytes"], "properties": {
            "blob_id": {"type": "string"}, "upload_url": {"type": "string", "format": "uri"}, "max_bytes": {"type": "integer"}}}),
    );
    schemas.insert(
        "UploadStored".into(),
        json!({"type": "object", "required": ["blob_id", "bytes"], "properties": {
            "blob_id": {"type": "string"}, "bytes": {"type": "integer"}}}),
    );
    let plan_names: Vec<&str> = super::plan::PLANS.iter().map(|p| p.name).collect();
    schemas.insert(
        "Account".into(),
        json!({"type": "object", "required": ["plan", "webhook_secret", "subscription", "balance", "usage"], "properties": {
            "plan": {"type": "object", "required": ["name", "monthly_credits", "rate_per_min", "max_file_bytes"], "properties": {
                "name": {"type": "string", "enum": plan_names}, "monthly_credits": {"type": "integer"},
                "rate_per_min": {"type": "integer"}, "max_file_bytes": {"type": "integer"}}},
            "webhook_secret": {"type": "string", "description": "Webhook signing secret (whsec_...)."},
            "subscription": {"type": "object", "required": ["provider", "subscription_id"], "properties": {
                "provider": {"type": ["string", "null"]}, "subscription_id": {"type": ["string", "null"]}}},
            "balance": {"type": "integer"},
            "usage": {"type": "object", "required": ["period_start", "credits_used"], "properties": {
                "period_start": {"type": "string", "format": "date-time"}, "credits_used": {"type": "integer"}}}}}),
    );
    let mut json_props = options_properties(false);
    json_props.insert("url".into(), json!({"type": "string", "format": "uri", "description": "Fetched by the server: http(s), up to 25 MB, 10 s, public addresses only."}));
    json_props
        .insert("blob_id".into(), json!({"type": "string", "description": "From POST /v1/uploads, after its PUT."}));
    schemas.insert(
        "ValidateJson".into(),
        json!({"type": "object", "additionalProperties": false, "properties": json_props,
            "description": "Exactly one of url and blob_id.",
            "oneOf": [{"required": ["url"], "not": {"required": ["blob_id"]}}, {"required": ["blob_id"], "not": {"required": ["url"]}}]}),
    );
    let mut mp_props = options_properties(true);
    mp_props.insert("file".into(), json!({"type": "string", "contentMediaType": "application/octet-stream", "description": "A .glb, or a .zip bundle holding a .gltf and its resources."}));
    schemas.insert(
        "ValidateMultipart".into(),
        json!({"type": "object", "required": ["file"], "additionalProperties": false, "properties": mp_props}),
    );
    json!({
        "schemas": schemas,
        "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "X-Api-Key",
            "description": "mk_live_ followed by 32 characters; made with `meshcheck accounts create`."}},
    })
}

fn operation(op: &str, summary: &str, authed: bool) -> Value {
    let mut o = Map::new();
    o.insert("operationId".into(), json!(op));
    o.insert("summary".into(), json!(summary));
    o.insert("security".into(), if authed { json!([{"ApiKey": []}]) } else { json!([]) });
    let mut responses = Map::new();
    let path_param = |name: &str, desc: &str| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}, "description": desc});
    match op {
        "validate" => {
            o.insert("description".into(), json!(fill("Up to 20 MB answers 200 with the report; above, 202 with a job. Above the plan's max file (at most 250 MB), 413. Costs {price:validate_checks_only} credit (checks_only) or {price:validate_full} (full), charged only once the input has loaded.")));
            o.insert(
                "requestBody".into(),
                json!({"required": true, "content": {
                "multipart/form-data": {"schema": schema_ref("ValidateMultipart")},
                "application/json": {"schema": schema_ref("ValidateJson")}}}),
            );
            responses.insert("200".into(), ok_json("The report.", schema_ref("Report")));
            responses
                .insert("202".into(), ok_json("The input is above 20 MB: a job to poll.", schema_ref("JobEnvelope")));
        }
        "render" => {
            o.insert("description".into(), json!(fill("Stills of an input up to 20 MB answer 200 with the render report; a turntable, or a larger input, is a job (202). Costs {price:render_stills} credits per started block of 6 stills, plus {price:render_turntable} for a turntable (a turntable with up to 6 stills: {price:render_turntable_with_stills}); charged once the input has loaded, refunded on 502 RENDER_FAILED. Stills and GIFs are kept 30 days behind signed URLs.")));
            o.insert(
                "requestBody".into(),
                json!({"required": true, "content": {
                "multipart/form-data": {"schema": schema_ref("RenderMultipart")},
                "application/json": {"schema": schema_ref("RenderJson")}}}),
            );
            responses.insert("200".into(), ok_json("The render report.", schema_ref("RenderReport")));
            responses.insert(
                "202".into(),
                ok_json("A turntable or an input above 20 MB: a job to poll.", schema_ref("JobEnvelope")),
            );
        }
        "inspect" => {
            o.insert("description".into(), json!(fill("Non-deterministic: a vision model answers about six renders (file, url, blob_id: rendered fresh) or the stored stills of render_id. Costs {price:inspect} credits, refunded when the model gives no valid answer (503 INSPECT_UNAVAILABLE, also when no model is configured: nothing charged).")));
            o.insert(
                "requestBody".into(),
                json!({"required": true, "content": {
                "multipart/form-data": {"schema": schema_ref("InspectMultipart")},
                "application/json": {"schema": schema_ref("InspectJson")}}}),
            );
            responses.insert("200".into(), ok_json("The answer envelope.", schema_ref("InspectAnswer")));
        }
        "billingCheckout" => {
            o.insert("description".into(), json!("Creates a subscription-mode Stripe Checkout Session for the account; the plan applies when Stripe's checkout.session.completed event arrives (POST /v1/billing/webhook). 503 BILLING_UNAVAILABLE when the server has no Stripe configuration."));
            o.insert(
                "requestBody".into(),
                json!({"required": true, "content": {"application/json": {"schema": schema_ref("CheckoutRequest")}}}),
            );
            responses.insert("200".into(), ok_json("The hosted checkout page.", schema_ref("SessionUrl")));
        }
        "billingPortal" => {
            o.insert(
                "description".into(),
                json!("A Stripe Customer Portal session for the account's customer (404 before the first checkout)."),
            );
            responses.insert("200".into(), ok_json("The customer-portal page.", schema_ref("SessionUrl")));
        }
        "billingWebhook" => {
            o.insert("description".into(), json!("Called by Stripe, not by clients: the event is verified with the Stripe-Signature header (HMAC-SHA256, 300 s tolerance) and applied once per event id (checkout.session.completed, customer.subscription.created/updated/deleted)."));
            o.insert("parameters".into(), json!([{"name": "Stripe-Signature", "in": "header", "required": false, "schema": {"type": "string"}, "description": "t=<unix>,v1=<hex HMAC-SHA256>; required in practice (400 without it)."}]));
            o.insert("requestBody".into(), json!({"required": false, "content": {"application/json": {"schema": {}}}}));
            responses.insert(
                "200".into(),
                json!({"description": "Received.", "content": {"application/json": {"schema": {"type": "object"}}}}),
            );
        }
        "getScreenshot" => {
            o.insert("description".into(), json!("Only through the signed URLs in reports: exp is the owner's expiry, sig its HMAC. A bad signature is 404; past exp, 410."));
            o.insert(
                "parameters".into(),
                json!([path_param("file", "{shot_id}.png or {shot_id}.gif"),
                    {"name": "exp", "in": "query", "required": false, "schema": {"type": "string"}},
                    {"name": "sig", "in": "query", "required": false, "schema": {"type": "string"}}]),
            );
            responses.insert(
                "200".into(),
                json!({"description": "The image.", "headers": rate_headers(), "content": {
                    "image/png": {"schema": {"type": "string", "contentMediaType": "image/png"}},
                    "image/gif": {"schema": {"type": "string", "contentMediaType": "image/gif"}}}}),
            );
        }
        "demoPage" => {
            responses.insert(
                "200".into(),
                json!({"description": "The page.", "headers": rate_headers(), "content": {"text/html": {"schema": {"type": "string"}}}}),
            );
        }
        "demoValidate" => {
            o.insert("description".into(), json!("The demo widget's endpoint: full mode on the server's demo account, no key, 4.4 MB, 10 requests per minute per client IP, watermarked screenshots."));
            o.insert(
                "requestBody".into(),
                json!({"required": true, "content": {"multipart/form-data": {"schema": schema_ref("DemoMultipart")}}}),
            );
            responses.insert("200".into(), ok_json("The report, with screenshots.", schema_ref("Report")));
        }
        "beginUpload" => {
            responses.insert("201".into(), ok_json("The upload handshake.", schema_ref("UploadBegin")));
        }
        "putUpload" => {
            o.insert("parameters".into(), json!([path_param("upload_id", "From upload_url.")]));
            o.insert("requestBody".into(), json!({"required": true, "content": {"application/octet-stream": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}}}));
            responses.insert("200".into(), ok_json("Stored.", schema_ref("UploadStored")));
        }
        "getJob" => {
            o.insert("parameters".into(), json!([path_param("id", "job_id")]));
            responses.insert("200".into(), ok_json("The job.", schema_ref("JobEnvelope")));
        }
        "getReport" => {
            o.insert("parameters".into(), json!([path_param("id", "report_id")]));
            responses.insert("200".into(), ok_json("The stored report.", schema_ref("Report")));
        }
        "getAccount" => {
            responses.insert("200".into(), ok_json("The account snapshot.", schema_ref("Account")));
        }
        "getSchema" => {
            let names: Vec<&str> = SCHEMAS.iter().map(|(n, _)| *n).collect();
            o.insert(
                "parameters".into(),
                json!([{"name": "name", "in": "path", "required": true, "schema": {"type": "string", "enum": names}}]),
            );
            responses.insert(
                "200".into(),
                json!({"description": "A JSON Schema.", "headers": rate_headers(),
                "content": {"application/schema+json": {"schema": {"type": "object"}}}}),
            );
        }
        "getOpenApi" => {
            responses.insert("200".into(), ok_json("OpenAPI 3.1.", json!({"type": "object"})));
        }
        "getLlmsTxt" => {
            responses.insert(
                "200".into(),
                json!({"description": "Plain text.", "headers": rate_headers(),
                "content": {"text/plain": {"schema": {"type": "string"}}}}),
            );
        }
        "health" => {
            responses.insert(
                "200".into(),
                json!({"description": "Serving.", "content": {"application/json": {"schema": {"type": "object"}}}}),
            );
            responses.insert("503".into(), json!({"description": "Not ready or shutting down.", "content": {"application/json": {"schema": {"type": "object"}}}}));
        }
        _ => {}
    }
    if op != "health" {
        for (status, codes) in errors_for(op, authed) {
            responses.insert(status.to_string(), error_response(&codes));
        }
    }
    o.insert("responses".into(), Value::Object(responses));
    Value::Object(o)
}

/// The whole document.
pub fn document(base_url: &str) -> Value {
    let mut paths = Map::new();
    for (method, path, op, summary, authed) in ROUTES {
        let entry = paths.entry(path.to_string()).or_insert_with(|| json!({}));
        entry[*method] = operation(op, summary, *authed);
    }
    let plans: Vec<String> = super::plan::PLANS
        .iter()
        .map(|p| {
            format!(
                "{} ({} credits/month, {}/min, {} MB)",
                p.name,
                p.monthly_credits,
                p.rate_per_min,
                p.max_file_bytes / 1_000_000
            )
        })
        .collect();
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "meshcheck",
            "version": "1.1.0",
            "description": format!("Validates glTF 2.0 assets and returns a report card. Plans: {}. Every response carries RateLimit-* headers; every error is the Error envelope.", plans.join("; ")),
            "license": {"name": "MIT OR Apache-2.0", "identifier": "MIT OR Apache-2.0"},
        },
        "servers": [{"url": base_url}],
        "paths": paths,
        "components": components(),
    })
}
