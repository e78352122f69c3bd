//! Portable GPU path of gnnkern (wgpu compute shaders).
