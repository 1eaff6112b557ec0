//! The dialect text of an actors query: the persons found (joined to the `persons` table), their
//! distinct ids, filtered, ordered and paged.

use super::Matched;
use super::parse::{Request, column_sql};
use crate::Invalid;

impl Request {
    /// One row per person: the selected columns, then the person's `properties`, `created_at`,
    /// `is_identified` and `distinct_ids` (what the person object is built from). One row more
    /// than the page tells whether more follow.
    pub(super) fn query(&self, matched: Option<&Matched>) -> Result<String, Invalid> {
        let mut ctes = Vec::new();
        let from = match matched {
            Some(matched) => {
                if !matched.ctes.is_empty() {
                    ctes.push(matched.ctes.clone());
                }
                ctes.push(format!("matched AS ({})", matched.query));
                "(SELECT persons.id AS id, persons.properties AS properties, \
                 persons.created_at AS created_at, persons.is_identified AS is_identified, \
                 matched.event_count AS event_count \
                 FROM matched INNER JOIN persons ON persons.id = matched.actor_id)"
            }
            None => "persons",
        };
        // With a source only the persons found need their distinct ids.
        let whose = match matched {
            Some(_) => " WHERE person_id IN (SELECT actor_id FROM matched)",
            None => "",
        };
        ctes.push(format!(
            "identities AS (SELECT toString(person_id) AS person_id, \
             groupUniqArray(distinct_id) AS distinct_ids FROM events{whose} GROUP BY person_id)"
        ));
        let selected: Vec<String> = self
            .columns
            .iter()
            .enumerate()
            .map(|(index, column)| format!("{} AS column_{index}", column_sql(column)))
            .collect();
        let filtered = match self.conditions.is_empty() {
            true => String::new(),
            false => format!(" WHERE {}", self.conditions.join(" AND ")),
        };
        Ok(format!(
            "WITH {ctes} SELECT {selected}, properties AS person_properties, \
             created_at AS person_created_at, is_identified AS person_is_identified, \
             identities.distinct_ids AS person_distinct_ids \
             FROM (SELECT * FROM {from}{filtered}) AS actors \
             LEFT JOIN identities ON identities.person_id = actors.id \
             ORDER BY {order} LIMIT {limit} OFFSET {offset}",
            ctes = ctes.join(", "),
            selected = selected.join(", "),
            order = self.order.join(", "),
            limit = self.limit + 1,
            offset = self.offset,
        ))
    }
}
