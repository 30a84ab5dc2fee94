// A tensor handed to the compiled module, read as a TensorView. Where the object's type carries the
// DLPack C exchange API (DLPack 1.3: torch >= 2.10 has it on torch.Tensor), its metadata is read
// straight from the object through the framework's C function, with no capsule and no call into
// Python; anything else goes through nanobind's DLPack import (a capsule, a NumPy array, an object
// with __dlpack__), as a framework without the API hands its tensors over.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <optional>

#include "step_plan.hpp"

namespace tilesched::python {

namespace dlpack {
struct ExchangeApi;  // DLPackExchangeAPI (tensor_argument.cpp declares the part it uses)
}

class TensorArgument {
 public:
  // Raises TypeError (DtypeError), naming the argument, for an object that is no tensor.
  TensorArgument(nanobind::handle object, const char* name);

  const TensorView& view() const { return view_; }
  // The producing framework's current stream (as torch.cuda.current_stream) on the tensor's CUDA
  // device, asked through the exchange API; nullopt for a tensor that came in without it or is
  // not on a CUDA device.
  std::optional<std::uintptr_t> current_stream() const;

 private:
  TensorView view_;
  const dlpack::ExchangeApi* api_ = nullptr;
  std::optional<nanobind::ndarray<>> imported_;  // the fallback's import, held for the call
};

}  // namespace tilesched::python
