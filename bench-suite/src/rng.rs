//! Seeded, counter-based inputs that the Python peers reproduce bit for bit.
//!
//! Element `i` of a stream with seed `s` is
//! `lo + (hi - lo) * (splitmix64(s + (i + 1) * 0x9E3779B97F4A7C15) >> 40) * 2^-24`,
//! computed in f32 (the 24-bit integer times `2^-24` is exact, then one f32
//! multiply and one f32 add). Because element `i` depends only on `(s, i)`
//! the stream is generated in parallel here and vectorised in NumPy in
//! `peers/peer_op.py` (`seeded_uniform`), so both sides feed the kernels
//! identical operands and their checksums are comparable.

use rayon::prelude::*;

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// The splitmix64 finaliser.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Element `i` of the stream `seed`, in `[lo, hi)`.
pub fn element(seed: u64, i: u64, lo: f32, hi: f32) -> f32 {
    let bits = mix(seed.wrapping_add(i.wrapping_add(1).wrapping_mul(GOLDEN))) >> 40;
    let unit = bits as f32 * (1.0 / 16_777_216.0);
    lo + (hi - lo) * unit
}

/// `len` elements of the stream `seed`, in `[lo, hi)`.
pub fn uniform(seed: u64, len: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut out = vec![0.0f32; len];
    out.par_chunks_mut(1 << 16).enumerate().for_each(|(c, chunk)| {
        let base = (c << 16) as u64;
        for (j, x) in chunk.iter_mut().enumerate() {
            *x = element(seed, base + j as u64, lo, hi);
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_is_deterministic_and_in_range() {
        let a = uniform(7, 100_000, -1.0, 1.0);
        assert_eq!(a, uniform(7, 100_000, -1.0, 1.0));
        assert_ne!(a, uniform(8, 100_000, -1.0, 1.0));
        assert!(a.iter().all(|&x| (-1.0..1.0).contains(&x)));
        let mean = a.iter().map(|&x| f64::from(x)).sum::<f64>() / a.len() as f64;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert_eq!(a[12345], element(7, 12345, -1.0, 1.0));
    }

    #[test]
    fn stream_matches_the_python_peers_bit_for_bit() {
        // Printed by peers/peer_op.py: seeded_uniform(1, 5, -1, 1) and seeded_uniform(7, 12346, 0.5, 1.5)[12345].
        let bits: Vec<u32> = uniform(1, 5, -1.0, 1.0).iter().map(|x| x.to_bits()).collect();
        assert_eq!(bits, [0x3e08_5168, 0x3efb_ae34, 0x3f71_2744, 0xbde3_e7a0, 0xbde4_4ac0]);
        assert_eq!(element(7, 12345, 0.5, 1.5).to_bits(), 0x3f8e_1a26);
    }
}
