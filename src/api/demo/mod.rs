//! The embedded demo provider.
