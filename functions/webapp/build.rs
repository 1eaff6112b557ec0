// include_dir! names the files it embeds, so cargo notices a changed file but not a new or removed
// one (a rebuilt console has new hashed names): rebuild whenever anything under console/dist changes.
fn main() {
    println!("cargo:rerun-if-changed=../../console/dist");
}
