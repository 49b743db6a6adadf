//! The VIS checks' answer types: what the vision model must return, as Rust
//! types from which `schemas/vis-001.json`, `vis-002.json` and `vis-003.json`
//! (JSON Schema 2020-12) are generated and against which every reply is
//! checked. Confidence is categorical, never a number.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How sure the model is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// A guess.
    Low,
    /// Likely.
    Medium,
    /// Clear from the images.
    High,
}

/// VIS-001: does the asset match a text description?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "VIS-001 answer", description = "Whether the rendered asset matches the prompt.")]
pub struct Vis001 {
    /// True when the asset is what the prompt describes.
    pub matches: bool,
    /// How sure the model is.
    pub confidence: Confidence,
    /// What the model sees, one short sentence each.
    pub observations: Vec<String>,
    /// Where the asset departs from the prompt (empty when it matches).
    pub mismatches: Vec<String>,
}

/// Kinds of texture artifact VIS-002 looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactKind {
    /// Visible seams where UV islands meet.
    Seam,
    /// Stretched or smeared texels.
    Stretching,
    /// Repeating tiles that read as a pattern.
    Tiling,
    /// Blurry or too-low-resolution texture.
    LowResolution,
    /// Missing or placeholder texture (checkerboard, flat magenta).
    Missing,
    /// Baked lighting or shadows that contradict the scene.
    BakedLighting,
    /// Normal-map errors (inverted, wrong space).
    NormalMap,
    /// Compression blocks, banding or noise.
    Compression,
    /// Anything else.
    Other,
}

/// One artifact VIS-002 found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    /// What kind of artifact.
    pub kind: ArtifactKind,
    /// The view it shows in (`front`, `right`, `back`, `left`, `top`, `three_quarter`).
    pub view: String,
    /// Where and what, one sentence.
    pub description: String,
    /// How sure the model is.
    pub confidence: Confidence,
}

/// VIS-002: texture-artifact scan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "VIS-002 answer", description = "Texture artifacts visible in the renders.")]
pub struct Vis002 {
    /// True when no artifact is visible.
    pub clean: bool,
    /// The artifacts found (empty when clean).
    pub artifacts: Vec<Artifact>,
}

/// A view cited as evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// The view (`front`, `right`, `back`, `left`, `top`, `three_quarter`).
    pub view: String,
    /// What in that view supports the answer.
    pub observation: String,
}

/// VIS-003: a freeform question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "VIS-003 answer", description = "The answer to a freeform question about the renders.")]
pub struct Vis003 {
    /// The answer, in a few sentences at most.
    pub answer: String,
    /// How sure the model is.
    pub confidence: Confidence,
    /// The views that support the answer.
    pub evidence: Vec<Evidence>,
}
