//! One small unstable sort (a heapsort) for every sort of the library: the standard library's
//! `sort_unstable*` compiles a 2 KiB quicksort and its helpers again for each element type and
//! comparator, this one about 250 bytes per element type. Every caller's order is total, so the
//! result is the same as `sort_unstable_by`'s.

use std::cmp::Ordering;

/// Sorts `v` by `cmp`, as `slice::sort_unstable_by` does.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    heapsort(v, &mut cmp);
}

/// Sorts `v` by the key `f` gives, as `slice::sort_unstable_by_key` does.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut f: impl FnMut(&T) -> K) {
    heapsort(v, &mut |a: &T, b: &T| f(a).cmp(&f(b)));
}

fn heapsort<T>(v: &mut [T], cmp: &mut dyn FnMut(&T, &T) -> Ordering) {
    let len = v.len();
    // Build a max-heap, then move its root to the end, one element at a time.
    for start in (0..len / 2).rev() {
        sift_down(v, start, len, cmp);
    }
    for end in (1..len).rev() {
        v.swap(0, end);
        sift_down(v, 0, end, cmp);
    }
}

fn sift_down<T>(v: &mut [T], mut node: usize, end: usize, cmp: &mut dyn FnMut(&T, &T) -> Ordering) {
    loop {
        let mut child = 2 * node + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && cmp(&v[child], &v[child + 1]) == Ordering::Less {
            child += 1;
        }
        if cmp(&v[node], &v[child]) != Ordering::Less {
            return;
        }
        v.swap(node, child);
        node = child;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_the_standard_library() {
        let mut seed = 12345u64;
        for len in 0..200 {
            let mut v: Vec<u64> = (0..len)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    seed >> 58
                })
                .collect();
            let mut expected = v.clone();
            expected.sort_unstable();
            sort_by(&mut v, |a, b| a.cmp(b));
            assert_eq!(v, expected);
            let mut w: Vec<(u64, usize)> = expected.iter().rev().copied().zip(0..).collect();
            sort_by_key(&mut w, |(k, i)| (*k, *i));
            assert!(w.windows(2).all(|p| p[0] <= p[1]));
        }
    }
}
