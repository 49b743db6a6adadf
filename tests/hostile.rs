//! hostile tests (in progress).
