//! Lists as the command line gives them.

/// The items of `v` in their first order, each once (`--threads 1,2,1`
/// runs 1 and 2; `Vec::dedup` would only drop adjacent repeats).
pub fn dedup<T: PartialEq>(v: Vec<T>) -> Vec<T> {
    let mut o: Vec<T> = Vec::with_capacity(v.len());
    for x in v {
        if !o.contains(&x) {
            o.push(x);
        }
    }
    o
}

#[cfg(test)]
mod tests {
    #[test]
    fn first_order_is_kept_and_repeats_dropped() {
        assert_eq!(super::dedup(vec![1, 2, 1, 3, 2]), vec![1, 2, 3]);
        assert_eq!(super::dedup(Vec::<u8>::new()), Vec::<u8>::new());
    }
}
