//! checks tests (in progress).
