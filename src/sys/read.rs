//! The one bounded reader (issue 39 §1): filled in on its own branch.
