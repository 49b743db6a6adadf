//! Errors on the terminal: miette diagnostics with the specification's code,
//! a hint, and colour only where it is wanted.

use crate::error::Error;
use std::io::IsTerminal;

/// Whether colour is wanted on a stream (a terminal, and NO_COLOR unset or empty).
pub fn colour_on(terminal: bool) -> bool {
    terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// A miette diagnostic built from an engine error.
#[derive(Debug)]
pub struct Diagnostic {
    code: String,
    text: String,
    help: Option<String>,
}

impl Diagnostic {
    /// From an error, naming the file it concerns.
    pub fn new(err: &Error, file: Option<&str>) -> Diagnostic {
        // Paths and messages may hold an asset's text: no terminal escapes.
        let text = match file {
            Some(f) => format!("{f}: {}", err.message),
            None => err.message.clone(),
        };
        let text = super::escape::terminal(&text).into_owned();
        let help = err.help.clone().or_else(|| default_help(err)).map(|h| super::escape::terminal(&h).into_owned());
        Diagnostic { code: err.code.as_str().to_string(), text, help }
    }
}

fn default_help(err: &Error) -> Option<String> {
    use crate::error::ErrorCode::*;
    Some(
        match err.code {
            MalformedGltf => "the file is damaged or was written by a broken exporter; re-export it, or run the Khronos glTF-Validator for the details",
            BundleIncomplete => "add the missing files to the bundle (or next to the .gltf) at the paths its URIs give",
            UnsupportedFormat => "meshcheck reads .glb, .gltf (with its resources) and .zip bundles",
            BadRequest => "see `meshcheck validate --help`",
            _ => return None,
        }
        .to_string(),
    )
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Diagnostic {}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(&self.code))
    }
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }
}

/// Prints an error on standard error through miette.
pub fn print_error(err: &Error, file: Option<&str>) {
    let diag = Diagnostic::new(err, file);
    let theme = if colour_on(std::io::stderr().is_terminal()) {
        miette::GraphicalTheme::unicode()
    } else {
        miette::GraphicalTheme::unicode_nocolor()
    };
    let mut out = String::new();
    let handler = miette::GraphicalReportHandler::new_themed(theme).with_width(100);
    if handler.render_report(&mut out, &diag).is_err() {
        out = format!("error[{}]: {}\n", diag.code, diag.text);
    }
    eprint!("{out}");
}
