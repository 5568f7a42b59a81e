//! The column table's invariants: widths hold their titles, names are unique, and the
//! first sort directions and the doc table are what users are told.

use super::*;

#[test]
fn every_fixed_width_holds_its_title_and_the_sort_arrow() {
    for s in &TABLE {
        let title = s.title.chars().count() as u16 + 1;
        match s.width {
            Width::Cells(n) => assert!(n >= title, "{}", s.title),
            Width::Longest { min, max } => assert!(min >= title && max >= min, "{}", s.title),
            Width::Rest => {}
        }
    }
}

#[test]
fn config_names_are_unique_and_name_their_column() {
    let names: Vec<_> = Column::config_names().collect();
    assert_eq!(names.len(), Column::ALL.len());
    for c in Column::ALL {
        assert_eq!(Column::from_config_name(c.config_name()), Some(c));
    }
    assert_eq!(
        Column::from_config_name("host"),
        None,
        "HOST appears by itself"
    );
    assert!(!Column::ALL.contains(&Column::Host));
}

#[test]
fn names_and_ids_sort_smallest_first_and_quantities_largest_first() {
    let ascending: Vec<_> = Column::ALL
        .into_iter()
        .filter(|c| c.default_direction() == SortDir::Ascending)
        .map(Column::config_name)
        .collect();
    assert_eq!(ascending, ["gpu", "pid", "user", "job", "type", "command"]);
    assert_eq!(Column::Host.sorts_as(), Column::Gpu);
    assert_eq!(
        Column::Host.name(),
        "GPU",
        "the arrow stands for GPU's order"
    );
    assert_eq!(Column::HostMemory.name(), "HOST MEM");
}

#[test]
fn the_doc_table_has_a_row_per_column() {
    let table = markdown_table();
    assert_eq!(table.lines().count(), 2 + TABLE.len());
    assert!(table.contains("| HOST | — |"));
    assert!(table.contains("| VRAM | `vram` | GPU memory it holds | largest first |"));
}
