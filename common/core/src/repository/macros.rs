//! The macros an entity's module declares itself with: [`stamped!`](crate::stamped) for its
//! fields and stamps, [`entity_reads!`](crate::entity_reads) for its `Stored` and typed reads.

/// Implements [`Fields`](crate::repository::Fields) (keyed by `id`, of type `$key`;
/// `soft_deleted`: by its `deleted` flag) and [`Stamped`](crate::repository::Stamped) for an
/// entity whose fields are named `id`, `team_id`, `version`, `created_at`, `created_by` and
/// `updated_at`.
#[macro_export]
macro_rules! stamped {
    ($entity:ty, $key:ty, soft_deleted) => {
        $crate::stamped!(@fields $entity, $key, fn deleted(&self) -> bool { self.deleted });
        $crate::stamped!(@stamps $entity);
    };
    ($entity:ty, $key:ty) => {
        $crate::stamped!(@fields $entity, $key,);
        $crate::stamped!(@stamps $entity);
    };
    (@fields $entity:ty, $key:ty, $($deleted:item)?) => {
        impl $crate::repository::Fields for $entity {
            type Key = $key;

            fn key(&self) -> &$key {
                &self.id
            }

            fn team_id(&self) -> i64 {
                self.team_id
            }

            $($deleted)?
        }
    };
    (@stamps $entity:ty) => {
        impl $crate::repository::Stamped for $entity {
            fn stamps(&self) -> $crate::repository::Stamps<Self::Key> {
                $crate::repository::Stamps {
                    id: self.id,
                    team_id: self.team_id,
                    version: self.version,
                    created_at: self.created_at,
                    created_by: self.created_by,
                    updated_at: self.updated_at,
                }
            }

            fn set_stamps(&mut self, stamps: $crate::repository::Stamps<Self::Key>) {
                self.id = stamps.id;
                self.team_id = stamps.team_id;
                self.version = stamps.version;
                self.created_at = stamps.created_at;
                self.created_by = stamps.created_by;
                self.updated_at = stamps.updated_at;
            }
        }
    };
}

/// Declares, in an entity's repository module, what needs the entity's own name: its `Stored`
/// (the entity under the field `$field`, with the item version a write must still find, under
/// `$version`; a [`VersionedRead`](crate::repository::VersionedRead) for generic code) and the
/// typed reads over the generic ones: `get`, `found` (404 for a route) and `list_all`, and for
/// a soft-deleted entity (`live`) `get_live` and `list_live`.
///
/// ```ignore
/// common::entity_reads! { Cohort, i64, Stored { cohort, item_version }, live }
/// ```
#[macro_export]
macro_rules! entity_reads {
    ($entity:ty, $key:ty, Stored { $field:ident, $version:ident }) => {
        #[doc = concat!("A `", stringify!($entity), "` as read, with the Store item's version that a write must still find.")]
        #[derive(Debug, Clone, PartialEq)]
        pub struct Stored {
            pub $field: $entity,
            pub $version: u64,
        }

        impl $crate::repository::VersionedRead<$entity> for Stored {
            fn from_read($field: $entity, $version: u64) -> Self {
                Stored { $field, $version }
            }

            fn entity(&self) -> &$entity {
                &self.$field
            }

            fn item_version(&self) -> u64 {
                self.$version
            }
        }

        #[doc = concat!("One `", stringify!($entity), "`, deleted or not.")]
        pub async fn get(
            store: &dyn $crate::store::Store,
            team_id: i64,
            key: $key,
        ) -> Result<Option<Stored>, $crate::store::StoreError> {
            let key = ::std::borrow::Borrow::borrow(&key);
            Ok($crate::repository::get::<$entity>(store, team_id, key)
                .await?
                .map(|($field, $version)| Stored { $field, $version }))
        }

        #[doc = concat!("The `", stringify!($entity), "` a route names, as read: 404 when there is none, or when it is deleted unless `deleted_too` (a restore names a deleted one).")]
        pub async fn found(
            store: &dyn $crate::store::Store,
            team_id: i64,
            key: $key,
            deleted_too: bool,
        ) -> Result<Stored, $crate::error::ApiError> {
            get(store, team_id, key)
                .await?
                .filter(|stored| {
                    deleted_too || !$crate::repository::Fields::deleted(&stored.$field)
                })
                .ok_or_else($crate::error::ApiError::not_found)
        }

        #[doc = concat!("Every `", stringify!($entity), "` of a project, deleted ones included, in key order.")]
        pub async fn list_all(
            store: &dyn $crate::store::Store,
            team_id: i64,
        ) -> Result<Vec<$entity>, $crate::store::StoreError> {
            $crate::repository::list_all::<$entity>(store, team_id).await
        }
    };
    ($entity:ty, $key:ty, Stored { $field:ident, $version:ident }, live) => {
        $crate::entity_reads!($entity, $key, Stored { $field, $version });

        #[doc = concat!("One `", stringify!($entity), "` unless it is deleted (what every read route shows).")]
        pub async fn get_live(
            store: &dyn $crate::store::Store,
            team_id: i64,
            key: $key,
        ) -> Result<Option<$entity>, $crate::store::StoreError> {
            let key = ::std::borrow::Borrow::borrow(&key);
            $crate::repository::get_live::<$entity>(store, team_id, key).await
        }

        #[doc = concat!("Every `", stringify!($entity), "` of a project that is not deleted, in key order.")]
        pub async fn list_live(
            store: &dyn $crate::store::Store,
            team_id: i64,
        ) -> Result<Vec<$entity>, $crate::store::StoreError> {
            $crate::repository::list_live::<$entity>(store, team_id).await
        }
    };
}
