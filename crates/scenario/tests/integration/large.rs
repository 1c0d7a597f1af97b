//! Files with tens of thousands of domains, tasks and events: validation is linear (it
//! was quadratic: 100,000 tasks took over half a minute), and still finds what it must —
//! a duplicate name at the end of a long list, the one domain among thousands that a
//! policy swap refuses. No timing is asserted; a quadratic pass would make these tests
//! take minutes.

use rtvmm_scenario::{ErrorKind, Scenario};

use crate::util::assert_names;

fn task(name: &str) -> String {
    format!("[[domain.task]]\nname = \"{name}\"\nperiod = \"1000s\"\nwcet = \"1us\"\n")
}

fn domain(name: &str, budget: &str) -> String {
    format!(
        "[[domain]]\nname = \"{name}\"\nvcpu = {{ budget = \"{budget}\", period = \"1000s\" }}\n{}",
        task("t")
    )
}

#[test]
fn fifty_thousand_tasks_with_a_duplicate_name_at_the_end() {
    let n = 50_000;
    let mut text = String::from("duration = \"1s\"\n[[domain]]\nname = \"d\"\nvcpu = { budget = \"1ms\", period = \"10ms\" }\n");
    for i in 0..n {
        text.push_str(&task(&format!("t{i}")));
    }
    let valid = Scenario::from_toml(&text, "ok.toml").unwrap();
    assert_eq!(valid.system.domains[0].tasks.len(), n);
    text.push_str(&task("t31415"));
    let e = Scenario::from_toml(&text, "bad.toml").unwrap_err();
    assert!(
        matches!(&e.kind, ErrorKind::Duplicate { what: "task", name, .. } if name == "t31415"),
        "{e}"
    );
    assert_names(&e, Some("d"), Some("t31415"), Some("name"));
}

/// 10,000 domains, then events that add, change, remove and swap: a swap to RTDS is
/// refused exactly while a present domain has a budget RTDS cannot take (below 10 µs),
/// naming that domain and the event.
#[test]
fn policy_swaps_over_ten_thousand_domains_name_the_refused_one() {
    let n = 10_000;
    let mut base = String::from("duration = \"1s\"\n");
    for i in 0..n {
        base.push_str(&domain(&format!("d{i}"), "10us"));
    }
    let event = |at: u64, action: &str, rest: &str| {
        format!("[[event]]\nat = \"{at}ms\"\naction = \"{action}\"\n{rest}")
    };
    let add_small = event(
        1,
        "add-domain",
        "[event.domain]\nname = \"small\"\nvcpu = { budget = \"1us\", period = \"1000s\" }\n\
         [[event.domain.task]]\nname = \"t\"\nperiod = \"1000s\"\nwcet = \"1us\"\n",
    );
    let shrink = event(2, "sched-set", "domain = \"d1234\"\nbudget = \"5us\"\n");
    let grow = event(3, "sched-set", "domain = \"d1234\"\nbudget = \"20us\"\n");
    let remove = event(4, "remove-domain", "domain = \"small\"\n");
    let swap = |at| event(at, "swap-policy", "policy = \"rtds\"\n");
    let back = |at| event(at, "swap-policy", "policy = \"deferrable\"\n");

    // The added domain is present at the swap: refused, and named.
    let text = format!("{base}{add_small}{}", swap(2));
    let e = Scenario::from_toml(&text, "bad.toml").unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Param { .. }), "{e}");
    assert_eq!(e.location.event, Some(2));
    assert_eq!(e.location.domain.as_deref(), Some("small"));

    // Removed before the swap: fine, and a changed budget is re-counted both ways.
    let text = format!(
        "{base}{add_small}{shrink}{}{grow}{remove}{}",
        back(2),
        swap(5)
    );
    Scenario::from_toml(&text, "ok.toml").unwrap();
    let text = format!("{base}{add_small}{shrink}{remove}{}", swap(5));
    let e = Scenario::from_toml(&text, "bad.toml").unwrap_err();
    assert_eq!(e.location.domain.as_deref(), Some("d1234"), "{e}");
    assert_eq!(e.location.event, Some(4));
}
