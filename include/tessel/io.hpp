// tessel io: .npy and safetensors readers and writers. They need no JSON library: safetensors
// headers are read and written by io/json.hpp. Separate from tessel.hpp so that programs without
// file I/O do not compile it (about 1.2 s of g++ -O2 on its own, most of it <filesystem>,
// <fstream> and the readers).
#pragma once

#include "io/npy.hpp"
#include "io/npy_tensor.hpp"
#include "io/safetensors.hpp"
