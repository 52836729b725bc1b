//! The one spawn function (issue 39 §2): filled in on its own branch.
