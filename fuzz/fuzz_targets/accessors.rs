//! Fuzz target for accessor decoding: `asset::data::DocData` (buffer views,
//! EXT_meshopt_compression views and their filters, plain, strided,
//! normalised and sparse accessors, index accessors, the decode budget),
//! `asset::draco::decode` (KHR_draco_mesh_compression) and
//! `asset::scene::build`, which reads every drawn primitive (morph targets,
//! EXT_mesh_gpu_instancing, skins) through them.
//!
//! Two kinds of input share the target:
//! - a GLB, .gltf or zip bundle (the seeds: real Draco, meshopt, sparse and
//!   quantized assets), read as the loader reads it;
//! - anything else: a structured document (`meshcheck_fuzz::synth`) whose
//!   fields the bytes choose, packed as a GLB around the remaining bytes.
//!
//! Run with `cargo fuzz run accessors`. To see the document a structured
//! input makes, run the target on it with `FUZZ_SYNTH_DUMP=<file>` set: the
//! GLB is written there.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    match meshcheck::asset::sniff(data) {
        Ok(_) => meshcheck_fuzz::exercise_container(data),
        Err(_) => {
            if let Ok(glb) = meshcheck_fuzz::synth::glb(data)
                && !glb.is_empty()
            {
                meshcheck_fuzz::synth::dump(&glb);
                meshcheck_fuzz::exercise_container(&glb);
            }
        }
    }
});
