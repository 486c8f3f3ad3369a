//! The capacity our search found, alone: published capacities of other
//! systems are context ([`crate::published`]), not rows beside it.

use crate::page::{num, strings, Figure, Section, Table};
use crate::Capacity;

pub(crate) fn capacity_section(c: &Capacity) -> Section {
    let row = vec![
        c.target.clone(),
        num(c.calls_per_s, 1),
        c.ci95_calls_per_s.map_or(String::new(), |h| format!("± {h:.1}")),
        c.max_deviation_pct.map_or(String::new(), |d| format!("± {d:.1} %")),
        c.searches.to_string(),
        c.service_level.clone(),
    ];
    Section {
        id: "capacity",
        title: "Capacity".into(),
        text: "The highest call rate served within the service level, found by searching the offered rate (the steps of each search are in the load section). Measured on this machine, with the generator on the same cores as the system under test.".into(),
        figures: vec![Figure::table(
            Table::new(
                "Capacity found",
                strings(["system under test", "calls/s", "95 % CI", "spread", "searches", "service level"]),
                vec![row],
            ),
            "",
        )],
    }
}
