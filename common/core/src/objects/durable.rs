//! The embedded object store: a local folder whose writes reach the disk before they return.
//! `object_store`'s `LocalFileSystem` renames a finished file into place but never fsyncs, so an
//! acknowledged capture batch or a committed Delta version could vanish in a power loss; S3
//! makes both durable on success, and so does this.

use std::fmt;
use std::path::PathBuf;

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result, UploadPart,
};

#[derive(Debug)]
pub struct DurableFileSystem {
    inner: LocalFileSystem,
}

impl DurableFileSystem {
    pub fn new(inner: LocalFileSystem) -> Self {
        Self { inner }
    }

    async fn sync(&self, location: &Path) -> Result<()> {
        sync_file(self.inner.path_to_filesystem(location)?).await
    }
}

/// Flushes a file's data and then the folder entry naming it.
async fn sync_file(file: PathBuf) -> Result<()> {
    tokio::task::spawn_blocking(move || {
        std::fs::File::open(&file)?.sync_all()?;
        match file.parent() {
            Some(folder) => std::fs::File::open(folder)?.sync_all(),
            None => Ok(()),
        }
    })
    .await
    .unwrap_or_else(|joined| Err(std::io::Error::other(joined)))
    .map_err(|error| object_store::Error::Generic {
        store: "DurableFileSystem",
        source: Box::new(error),
    })
}

impl fmt::Display for DurableFileSystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Durable({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for DurableFileSystem {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let result = self.inner.put_opts(location, payload, opts).await?;
        self.sync(location).await?;
        Ok(result)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let upload = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(DurableUpload {
            upload,
            file: self.inner.path_to_filesystem(location)?,
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[std::ops::Range<u64>],
    ) -> Result<Vec<bytes::Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await?;
        self.sync(to).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, options).await?;
        self.sync(to).await
    }
}

/// A streamed write made durable when it completes.
#[derive(Debug)]
struct DurableUpload {
    upload: Box<dyn MultipartUpload>,
    file: PathBuf,
}

#[async_trait]
impl MultipartUpload for DurableUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        self.upload.put_part(data)
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let result = self.upload.complete().await?;
        sync_file(self.file.clone()).await?;
        Ok(result)
    }

    async fn abort(&mut self) -> Result<()> {
        self.upload.abort().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;

    #[tokio::test]
    async fn writes_read_back_like_the_plain_folder() {
        let dir = tempfile::tempdir().unwrap();
        let store = DurableFileSystem::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let path = Path::from("a/b.txt");
        store.put(&path, "one".into()).await.unwrap();
        let mut upload = store.put_multipart(&Path::from("a/c.txt")).await.unwrap();
        upload.put_part("two".into()).await.unwrap();
        upload.complete().await.unwrap();
        store.copy(&path, &Path::from("d.txt")).await.unwrap();
        for (name, text) in [("a/b.txt", "one"), ("a/c.txt", "two"), ("d.txt", "one")] {
            let bytes = store.get(&Path::from(name)).await.unwrap().bytes().await;
            assert_eq!(bytes.unwrap(), text.as_bytes(), "{name}");
        }
        assert_eq!(std::fs::read(dir.path().join("a/c.txt")).unwrap(), b"two");
    }
}
