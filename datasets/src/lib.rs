//! Graph dataset loaders and generators for gnnkern.
