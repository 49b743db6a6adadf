//! multipart/form-data bodies for the /v1 API, written by hand with one
//! fixed boundary: the tests' uploads (tests/serve.rs, tests/serve_media.rs,
//! tests/faults.rs) and the load of the service benchmarks (benches/serve.rs,
//! benches/soak.rs).

/// The boundary between the parts.
pub const BOUNDARY: &str = "meshcheck-test-boundary-7MA4YWxkTrZu0gW";

/// The `file` part of a form.
#[derive(Debug, Clone, Copy)]
pub struct File<'a> {
    /// The name the part gives the file.
    pub filename: &'a str,
    /// The part's Content-Type.
    pub content_type: &'a str,
    /// The file's bytes.
    pub bytes: &'a [u8],
}

impl<'a> File<'a> {
    /// A model file: `application/octet-stream`.
    pub fn model(filename: &'a str, bytes: &'a [u8]) -> File<'a> {
        File { filename, content_type: "application/octet-stream", bytes }
    }
}

/// A form of the text `fields`, in order, then `file` if any: its
/// Content-Type header and its body.
pub fn form(fields: &[(&str, &str)], file: Option<File<'_>>) -> (String, Vec<u8>) {
    let mut body = Vec::with_capacity(file.map_or(0, |f| f.bytes.len()) + 512);
    for (name, value) in fields {
        body.extend_from_slice(
            format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes(),
        );
    }
    if let Some(File { filename, content_type, bytes }) = file {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={BOUNDARY}"), body)
}

/// The tests' upload: `fields`, then `file` as `model.glb` (no file part
/// when `file` is empty).
pub fn upload(file: &[u8], fields: &[(&str, &str)]) -> (String, Vec<u8>) {
    form(fields, (!file.is_empty()).then(|| File::model("model.glb", file)))
}
