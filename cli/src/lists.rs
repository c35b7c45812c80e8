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

/// `items` grouped by `key`, the groups in the order their keys first
/// appear, each group's items in their order (the tables' blocks, one per
/// backend and window).
pub fn groups<T, K: PartialEq>(items: &[T], key: impl Fn(&T) -> K) -> Vec<Vec<&T>> {
    let keys = dedup(items.iter().map(&key).collect());
    keys.iter()
        .map(|k| items.iter().filter(|x| key(x) == *k).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn first_order_is_kept_and_repeats_dropped() {
        assert_eq!(super::dedup(vec![1, 2, 1, 3, 2]), vec![1, 2, 3]);
        assert_eq!(super::dedup(Vec::<u8>::new()), Vec::<u8>::new());
    }

    #[test]
    fn groups_keep_first_key_order_and_item_order() {
        let v = [(1, 'a'), (2, 'b'), (1, 'c'), (3, 'd'), (2, 'e')];
        let g = super::groups(&v, |x| x.0);
        let letters: Vec<String> = g.iter().map(|b| b.iter().map(|x| x.1).collect()).collect();
        assert_eq!(letters, ["ac", "be", "d"]);
        assert!(super::groups(&[] as &[(u8, char)], |x| x.0).is_empty());
    }
}
