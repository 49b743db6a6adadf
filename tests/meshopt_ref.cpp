// meshopt_ref: meshoptimizer's analyzers on one index buffer, for
// tests/crosscheck_meshopt.py. Compiled by that script against meshoptimizer's
// own sources (the copy vendored in the meshopt crate), independently of
// meshcheck's Rust bindings.
//
// Input (a file named on the command line, little-endian):
//   u64 index_count, u64 vertex_count, u64 vertex_size,
//   u32 indices[index_count], f32 positions[vertex_count * 3]
// Output (one line on stdout):
//   vertices_transformed unique_referenced acmr atvr bytes_fetched overfetch
//   pixels_covered pixels_shaded overdraw
// The vertex cache is meshoptimizer's FIFO model with 16 entries and no warp
// or primitive-group limit (meshcheck's PERF-004 settings). Overdraw is
// computed on every OVERDRAW_STRIDE-th triangle (default 1) whose three
// corners are finite (as PERF-005, which samples above 131,072 triangles).
#include "meshoptimizer.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv)
{
	if (argc != 2 && argc != 3)
	{
		fprintf(stderr, "usage: meshopt_ref FILE [OVERDRAW_STRIDE]\n");
		return 2;
	}
	size_t stride = argc == 3 ? strtoul(argv[2], NULL, 10) : 1;
	FILE* f = fopen(argv[1], "rb");
	if (!f)
		return 2;
	uint64_t header[3];
	if (fread(header, 8, 3, f) != 3)
		return 2;
	size_t index_count = header[0], vertex_count = header[1], vertex_size = header[2];
	std::vector<unsigned int> indices(index_count);
	std::vector<float> positions(vertex_count * 3);
	if (fread(indices.data(), 4, index_count, f) != index_count || fread(positions.data(), 4, vertex_count * 3, f) != vertex_count * 3)
		return 2;
	fclose(f);

	meshopt_VertexCacheStatistics vc = meshopt_analyzeVertexCache(indices.data(), index_count, vertex_count, 16, 0, 0);
	std::vector<char> seen(vertex_count, 0);
	size_t unique = 0;
	for (unsigned int i : indices)
		if (!seen[i])
			seen[i] = 1, unique++;
	meshopt_VertexFetchStatistics vf = meshopt_analyzeVertexFetch(indices.data(), index_count, vertex_count, vertex_size);

	std::vector<unsigned int> finite;
	for (size_t t = 0; t < index_count; t += 3 * stride)
	{
		bool ok = true;
		for (int k = 0; k < 3; ++k)
			for (int c = 0; c < 3; ++c)
				ok = ok && std::isfinite(positions[indices[t + k] * 3 + c]);
		if (ok)
			finite.insert(finite.end(), indices.begin() + t, indices.begin() + t + 3);
	}
	meshopt_OverdrawStatistics od = {};
	if (!finite.empty())
		od = meshopt_analyzeOverdraw(finite.data(), finite.size(), positions.data(), vertex_count, 12);

	printf("%u %zu %.9g %.9g %u %.9g %u %u %.9g\n", vc.vertices_transformed, unique, vc.acmr, vc.atvr, vf.bytes_fetched, vf.overfetch,
	    od.pixels_covered, od.pixels_shaded, od.overdraw);
	return 0;
}
