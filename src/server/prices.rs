//! The price list: every priced operation of the service and its credits in
//! one table ([`PRICES`]), and what one request costs ([`Call::credits`]).
//!
//! - Every charge takes its figure from here: the synchronous handlers
//!   through [`super::metering::Meter::new`], the queue through
//!   [`super::work::Work::call`], the demo as the full validation it is.
//! - The documents that quote prices take them from here too: the OpenAPI
//!   descriptions ([`super::openapi`]), /llms.txt (its `{price:KEY}`
//!   placeholders, [`fill`]) and the Credits table of docs/service.md
//!   ([`markdown`], kept equal by `tests/generated.rs`).
//! - Each row names the specification's section that sets the figure; the
//!   unit test below holds the specification's figures, written in by hand.

use crate::report::Mode;

/// A priced unit of work: the rows of [`PRICES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priced {
    /// A validation without the renderer.
    ValidateChecksOnly,
    /// A validation with the renderer (the RND checks, stills).
    ValidateFull,
    /// A render's stills, per started block of [`STILLS_PER_BLOCK`].
    RenderStills,
    /// A render's turntable, on top of its stills.
    RenderTurntable,
    /// An answer of the vision model.
    Inspect,
    /// Everything else: uploads, jobs, reports, stills, the account,
    /// billing, the public documents.
    Free,
}

/// One row of the price list.
#[derive(Debug, Clone, Copy)]
pub struct Price {
    /// What is priced.
    pub item: Priced,
    /// Its name in a `{price:KEY}` placeholder.
    pub key: &'static str,
    /// The credits it costs.
    pub credits: i64,
    /// The operation in words (a row of docs/service.md's Credits table).
    pub what: &'static str,
    /// Where the service specification sets the figure.
    pub spec: &'static str,
}

/// Stills a render block holds: a render costs [`Priced::RenderStills`]
/// once per started block.
pub const STILLS_PER_BLOCK: usize = 6;

/// The price list, one row per [`Priced`].
pub static PRICES: [Price; 6] = [
    Price {
        item: Priced::ValidateChecksOnly,
        key: "validate_checks_only",
        credits: 1,
        what: "POST /v1/validate, `checks_only`",
        spec: "Endpoints, POST /v1/validate (Cost); Limits, Credit costs (validate checks_only)",
    },
    Price {
        item: Priced::ValidateFull,
        key: "validate_full",
        credits: 2,
        what: "POST /v1/validate, `full` (the renderer runs: RND-001..003)",
        spec: "Endpoints, POST /v1/validate (Cost); Limits, Credit costs (validate full)",
    },
    Price {
        item: Priced::RenderStills,
        key: "render_stills",
        credits: 2,
        what: "POST /v1/render, each started block of 6 stills",
        spec: "Endpoints, POST /v1/render (Cost: 2 for up to 6 stills; 7 to 12 not shown, a second block here); Limits, Credit costs (render up to 6 stills)",
    },
    Price {
        item: Priced::RenderTurntable,
        key: "render_turntable",
        credits: 2,
        what: "POST /v1/render, a turntable, on top of its stills",
        spec: "Endpoints, POST /v1/render (Cost: 4 for a turntable, its stills included); Limits, Credit costs (render turntable)",
    },
    Price {
        item: Priced::Inspect,
        key: "inspect",
        credits: 8,
        what: "POST /v1/inspect",
        spec: "Endpoints, POST /v1/inspect (Cost 8 credits); Limits, Credit costs (inspect)",
    },
    Price {
        item: Priced::Free,
        key: "free",
        credits: 0,
        what: "uploads, jobs, reports, screenshots, account, billing, public documents",
        spec: "Limits, Credit costs (uploads, jobs, report re-fetch, account, billing, schemas, openapi, llms.txt); each of those endpoints (Free)",
    },
];

/// The row of `item`.
pub fn row(item: Priced) -> &'static Price {
    PRICES.iter().find(|p| p.item == item).expect("every Priced has a row in PRICES")
}

/// The credits of `item`.
pub fn credits(item: Priced) -> i64 {
    row(item).credits
}

/// A request as the meter sees it: what decides its price.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// POST /v1/validate in `mode`.
    Validate {
        /// checks_only or full.
        mode: Mode,
    },
    /// POST /v1/render: `stills` stills (1 to 12), with or without a turntable.
    Render {
        /// How many stills.
        stills: usize,
        /// Whether a turntable was asked for.
        turntable: bool,
    },
    /// POST /v1/inspect.
    Inspect,
    /// POST /demo/validate: a full validation, charged to the demo account.
    Demo,
}

impl Call {
    /// The credits the request costs.
    pub fn credits(self) -> i64 {
        match self {
            Call::Validate { mode: Mode::ChecksOnly } => credits(Priced::ValidateChecksOnly),
            Call::Validate { mode: Mode::Full } | Call::Demo => credits(Priced::ValidateFull),
            Call::Render { stills, turntable } => {
                let blocks = stills.div_ceil(STILLS_PER_BLOCK).max(1) as i64;
                let turntable = if turntable { credits(Priced::RenderTurntable) } else { 0 };
                blocks * credits(Priced::RenderStills) + turntable
            }
            Call::Inspect => credits(Priced::Inspect),
        }
    }

    /// The reason its ledger row gives (a job's adds " (job)").
    pub fn reason(self) -> &'static str {
        match self {
            Call::Validate { .. } | Call::Demo => "validate",
            Call::Render { .. } => "render",
            Call::Inspect => "inspect",
        }
    }
}

/// Requests whose price the documents quote whole: `{price:KEY}` names.
pub const QUOTED: [(&str, Call); 3] = [
    ("render_turntable_with_stills", Call::Render { stills: STILLS_PER_BLOCK, turntable: true }),
    ("render_12_stills", Call::Render { stills: 2 * STILLS_PER_BLOCK, turntable: false }),
    ("demo", Call::Demo),
];

/// `template` with every `{price:KEY}` replaced by the credits of that row
/// of [`PRICES`] or of that request of [`QUOTED`].
pub fn fill(template: &str) -> String {
    let rows = PRICES.iter().map(|p| (p.key, p.credits));
    let quoted = QUOTED.iter().map(|(key, call)| (*key, call.credits()));
    rows.chain(quoted).fold(template.to_string(), |text, (key, credits)| {
        text.replace(&format!("{{price:{key}}}"), &credits.to_string())
    })
}

/// docs/service.md's Credits table and what follows from it, in markdown.
pub fn markdown() -> String {
    let mut out = String::from("| Operation | Credits | Specification |\n|---|---|---|\n");
    for p in &PRICES {
        out.push_str(&format!("| {} | {} | {} |\n", p.what, p.credits, p.spec));
    }
    out.push_str(&fill(
        "\nSo a render of 1 to 6 stills costs {price:render_stills}, of 7 to 12 stills {price:render_12_stills}, \
         and a turntable with up to 6 stills {price:render_turntable_with_stills}; POST /demo/validate charges \
         the demo account a full validation's {price:demo}.\n",
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's figures (service-spec.md: each endpoint's Cost
    /// line and the Limits section's "Credit costs" table), written in by
    /// hand: a change of price must change this test too.
    #[test]
    fn the_table_holds_the_specifications_prices() {
        // | validate checks_only | 1 |
        assert_eq!(Call::Validate { mode: Mode::ChecksOnly }.credits(), 1);
        // | validate full | 2 |
        assert_eq!(Call::Validate { mode: Mode::Full }.credits(), 2);
        // | render up to 6 stills | 2 |
        for stills in 1..=6 {
            assert_eq!(Call::Render { stills, turntable: false }.credits(), 2, "{stills} stills");
        }
        // | render turntable | 4 | (the turntable's stills are the 6 standard views)
        assert_eq!(Call::Render { stills: 6, turntable: true }.credits(), 4);
        // | inspect | 8 |
        assert_eq!(Call::Inspect.credits(), 8);
        // | uploads, jobs, report re-fetch, account, billing, schemas, openapi, llms.txt | 0 |
        assert_eq!(credits(Priced::Free), 0);
    }

    /// What the specification leaves open, as this service decides it
    /// (docs/service.md, Credits).
    #[test]
    fn what_the_specification_leaves_open() {
        // "Cost for 7 to 12 stills: not shown": a second block.
        for stills in 7..=12 {
            assert_eq!(Call::Render { stills, turntable: false }.credits(), 4, "{stills} stills");
        }
        assert_eq!(Call::Render { stills: 12, turntable: true }.credits(), 6);
        // The demo validates in full mode on its own account.
        assert_eq!(Call::Demo.credits(), Call::Validate { mode: Mode::Full }.credits());
    }

    #[test]
    fn every_item_has_one_row_and_every_key_one_meaning() {
        for p in &PRICES {
            assert!(std::ptr::eq(row(p.item), p), "{:?} has more than one row", p.item);
            assert!(!p.what.is_empty() && !p.spec.is_empty());
        }
        let mut keys: Vec<&str> = PRICES.iter().map(|p| p.key).chain(QUOTED.iter().map(|(k, _)| *k)).collect();
        let n = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), n, "a {{price:KEY}} name is used twice");
        assert!(!markdown().contains("{price:"));
    }

    #[test]
    fn ledger_reasons_are_the_endpoints() {
        assert_eq!(Call::Validate { mode: Mode::Full }.reason(), "validate");
        assert_eq!(Call::Demo.reason(), "validate");
        assert_eq!(Call::Render { stills: 6, turntable: false }.reason(), "render");
        assert_eq!(Call::Inspect.reason(), "inspect");
    }

    #[test]
    fn fill_replaces_every_placeholder_of_the_served_documents() {
        let llms = fill(include_str!("llms.txt"));
        assert!(!llms.contains("{price:"), "an unknown placeholder is left in llms.txt");
        assert!(llms.contains(
            "Costs: validate checks_only 1, validate full 2, render 2 per 6 stills (turntable +2), inspect 8;"
        ));
        assert_eq!(fill("{price:inspect} and {price:free}"), "8 and 0");
    }
}
