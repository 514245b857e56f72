//! A 64-bit fingerprint of a local array: what ftla remembers of factors
//! kept in the program's own storage, to refuse an array changed since.

/// Local: a 64-bit hash of `data`'s bits, one pass over it. Every element
/// takes part, position included, so that any change of value or order
/// changes it but with chance 2⁻⁶⁴ (it is no cryptographic hash: it finds
/// mistakes, not forgeries). Four independent lanes keep it near memory
/// speed.
pub(crate) fn fingerprint(data: &[f64]) -> u64 {
    const K: [u64; 4] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0x85EB_CA77_C2B2_AE63];
    let mut lanes = K;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        for (lane, (x, k)) in lanes.iter_mut().zip(c.iter().zip(K)) {
            *lane = (*lane ^ x.to_bits()).wrapping_mul(k).rotate_left(29);
        }
    }
    for (lane, x) in lanes.iter_mut().zip(chunks.remainder()) {
        *lane = (*lane ^ x.to_bits()).wrapping_mul(K[0]).rotate_left(29);
    }
    let mut h = (data.len() as u64).wrapping_mul(K[1]);
    for lane in lanes {
        h = (h ^ lane).wrapping_mul(K[2]).rotate_left(31);
    }
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::fingerprint;

    #[test]
    fn any_change_of_one_element_changes_it() {
        let a: Vec<f64> = (0..1001).map(|i| (i as f64).sin()).collect();
        let base = fingerprint(&a);
        assert_eq!(base, fingerprint(&a.clone()));
        for i in [0, 1, 2, 3, 500, 999, 1000] {
            let mut b = a.clone();
            b[i] = f64::from_bits(b[i].to_bits() ^ 1);
            assert_ne!(fingerprint(&b), base, "element {i}");
        }
        // Two elements swapped (same lane or not), a zero's sign, a length.
        let mut swapped = a.clone();
        swapped.swap(4, 8);
        assert_ne!(fingerprint(&swapped), base);
        let mut swapped = a.clone();
        swapped.swap(4, 5);
        assert_ne!(fingerprint(&swapped), base);
        assert_ne!(fingerprint(&[0.0]), fingerprint(&[-0.0]));
        assert_ne!(fingerprint(&a[..1000]), base);
    }
}
