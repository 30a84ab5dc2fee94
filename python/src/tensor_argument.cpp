#include "tensor_argument.hpp"

#include <fmt/format.h>

namespace nb = nanobind;

namespace tilesched::python {

namespace dlpack {

// DLPack's C ABI, the part the exchange API's functions take (dlpack.h, version 1.3). The
// layouts are DLPack's own; only the names are ours.
struct Version {
  std::uint32_t major, minor;
};
struct Device {
  std::int32_t device_type, device_id;  // DLDeviceType: 1 CPU, 2 CUDA
};
struct DataType {
  std::uint8_t code, bits;
  std::uint16_t lanes;
};
struct Tensor {
  void* data;
  Device device;
  std::int32_t ndim;
  DataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // may be null: row-major
  std::uint64_t byte_offset;
};
struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  std::uint64_t flags;
  Tensor dl_tensor;
};
struct ExchangeApiHeader {
  Version version;
  ExchangeApiHeader* prev_api;  // an older version of the table, or null
};
// Each function returns 0 on success, -1 with a Python exception set.
struct ExchangeApi {
  ExchangeApiHeader header;
  void* managed_tensor_allocator;  // not used here
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, ManagedTensorVersioned** out);
  void* managed_tensor_to_py_object_no_sync;  // not used here
  // Optional (null where the framework lacks it): fills a DLTensor whose shape and strides stay
  // the framework's, valid until control returns to it.
  int (*dltensor_from_py_object_no_sync)(void* py_object, Tensor* out);
  int (*current_work_stream)(std::int32_t device_type, std::int32_t device_id, void** out_stream);
};

constexpr std::uint32_t kMajorVersion = 1;
constexpr std::int32_t kCuda = 2;

}  // namespace dlpack

namespace {

// The exchange API of a type: its __dlpack_c_exchange_api__ capsule, in the newest version of
// DLPack 1 it offers; null where it has none. Looked up once per type, as DLPack suggests: the
// types that come are few (torch.Tensor and its subclasses, NumPy arrays, capsules). Each type
// met is held (with its capsule), so that its address keeps naming it; past kCached types the
// lookup is made every time.
const dlpack::ExchangeApi* exchange_api_of(PyTypeObject* type) {
  struct Entry {
    PyTypeObject* type;
    const dlpack::ExchangeApi* api;
  };
  constexpr int kCached = 8;
  static Entry cache[kCached];
  static int cached = 0;
  for (int i = 0; i < cached; ++i)
    if (cache[i].type == type) return cache[i].api;

  const dlpack::ExchangeApi* api = nullptr;
  PyObject* capsule = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type),
                                             "__dlpack_c_exchange_api__");
  if (capsule == nullptr) {
    PyErr_Clear();
  } else if (PyCapsule_IsValid(capsule, "dlpack_exchange_api")) {
    const auto* header = static_cast<const dlpack::ExchangeApiHeader*>(
        PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
    while (header != nullptr && header->version.major > dlpack::kMajorVersion)
      header = header->prev_api;
    if (header != nullptr && header->version.major == dlpack::kMajorVersion)
      api = reinterpret_cast<const dlpack::ExchangeApi*>(header);
  }
  if (cached == kCached) {
    Py_XDECREF(capsule);
    return api;
  }
  Py_INCREF(type);  // held with the capsule for the life of the process
  cache[cached++] = {type, api};
  return api;
}

void read(const dlpack::Tensor& t, TensorView& view) {
  view.data = static_cast<char*>(t.data) + t.byte_offset;
  view.set_dims(t.ndim, t.shape, t.strides);
  view.dtype_code = t.dtype.code;
  view.dtype_bits = t.dtype.bits;
  view.device_type = t.device.device_type;
  view.device_id = t.device.device_id;
}

}  // namespace

TensorArgument::TensorArgument(nb::handle object, const char* name) {
  PyObject* o = object.ptr();
  api_ = exchange_api_of(Py_TYPE(o));
  if (api_ != nullptr) {
    if (api_->dltensor_from_py_object_no_sync != nullptr) {
      dlpack::Tensor t;
      if (api_->dltensor_from_py_object_no_sync(o, &t) != 0) throw nb::python_error();
      read(t, view_);
    } else {
      dlpack::ManagedTensorVersioned* m = nullptr;
      if (api_->managed_tensor_from_py_object_no_sync(o, &m) != 0) throw nb::python_error();
      read(m->dl_tensor, view_);
      // The object the caller holds keeps the data alive; the view needs nothing else of it.
      if (m->deleter != nullptr) m->deleter(m);
    }
    return;
  }
  nb::ndarray<> a;
  if (!nb::try_cast(object, a))
    throw DtypeError(fmt::format("{} must be a tensor (an object DLPack can read), not {}", name,
                                 Py_TYPE(o)->tp_name));
  view_.data = a.data();
  view_.set_dims(static_cast<int>(a.ndim()), a.shape_ptr(), a.stride_ptr());
  view_.dtype_code = a.dtype().code;
  view_.dtype_bits = a.dtype().bits;
  view_.device_type = a.device_type();
  view_.device_id = a.device_id();
  imported_ = std::move(a);
}

std::optional<std::uintptr_t> TensorArgument::current_stream() const {
  if (api_ == nullptr || view_.device_type != dlpack::kCuda) return std::nullopt;
  void* stream = nullptr;
  if (api_->current_work_stream(dlpack::kCuda, view_.device_id, &stream) != 0)
    throw nb::python_error();
  return reinterpret_cast<std::uintptr_t>(stream);
}

}  // namespace tilesched::python
