//! Write-side validation of a flag. OWNER: CRUD helper.
