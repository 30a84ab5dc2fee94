// The mainloop: the producer's TMA loads of a tile's Q and K/V blocks into shared-memory rings, and
// each consumer warpgroup's K/V loop (S = Q K^T and O += P V with wgmma, the online softmax
// between them). Blocks run last to first, so the blocks a mask touches come first; the QK^T of
// block j is issued together with the PV of block j + 1, and the consumer warpgroups take turns
// issuing (PingPong), so one's softmax runs under the others' GEMMs ("Warp specialization and
// GEMM turns").
#pragma once

#include <cstdint>
#include <cute/tensor.hpp>
#include <cutlass/pipeline/sm90_pipeline.hpp>
#include <type_traits>
#include <utility>

#include "sm90/epilogue.cuh"
#include "sm90/problem.cuh"
#include "sm90/softmax.cuh"
#include "sm90/sync.cuh"
#include "sm90/traits.cuh"

namespace tilesched::gpu::sm90 {

// The TMA descriptors of Q, K and V (parameter space).
template <class Traits>
struct MainloopParams {
  typename Traits::TmaQ tma_q;
  typename Traits::TmaKV tma_k;
  typename Traits::TmaKV tma_v;
  // A paged cache whose pages are not whole K/V blocks (Problem::page_rows): K and V as (d,
  // heads, rows) in boxes of 64 columns (the 128-byte swizzle's width) by page_rows rows, which
  // land in a stage exactly where the whole block's box would put them. Unused otherwise.
  cute::TmaDescriptor page_rows_k;
  cute::TmaDescriptor page_rows_v;
  // Decoding (Problem::decoding): Q as (d, heads, rows) in boxes of 64 columns by
  // kMaxDecodeTokens rows, T / kMaxDecodeTokens boxes per query head of the tile's group and
  // column slice.
  cute::TmaDescriptor decode_q;
};

// Q buffers and the K and V stage rings: rows x d, d contiguous, 128-byte swizzle.
template <class Traits>
struct MainloopBuffers {
  cute::array_aligned<Element, cute::cosize_v<typename Traits::SmemLayoutQ>, 1024> q;
  cute::array_aligned<Element, cute::cosize_v<typename Traits::SmemLayoutKV>, 1024> k;
  cute::array_aligned<Element, cute::cosize_v<typename Traits::SmemLayoutKV>, 1024> v;
};

// Each buffer and stage guarded by a full/empty mbarrier pair (PipelineTmaAsync).
template <class Traits>
struct MainloopBarriers {
  typename Traits::PipelineQ::SharedStorage pipe_q;
  typename Traits::PipelineKV::SharedStorage pipe_k;
  typename Traits::PipelineKV::SharedStorage pipe_v;
};

struct MainloopWords {
  u32 never_written;  // the store that pins the PV wait (kv_block); never happens
};

// Where one role stands in the Q, K and V pipelines (the producer's write states, a consumer's
// read states).
template <class Traits>
struct MainloopStates {
  typename Traits::PipelineQ::PipelineState q;
  typename Traits::PipelineKV::PipelineState k;
  typename Traits::PipelineKV::PipelineState v;

  static __device__ __forceinline__ MainloopStates producer_start() {
    return {cutlass::make_producer_start_state<typename Traits::PipelineQ>(),
            cutlass::make_producer_start_state<typename Traits::PipelineKV>(),
            cutlass::make_producer_start_state<typename Traits::PipelineKV>()};
  }
};

// Operand slice k of a GEMM fragment (MMA, MMA_M or MMA_N, MMA_K). A shared-memory operand is a
// tensor of wgmma descriptors: CuTe advances one with a 32-bit add on its low word, and ptxas then
// rebuilds the constant high word beside every HGMMA (a UMOV each, 29 per K/V block and warp at
// d = 128). Advanced as one 64-bit value (the same value: the start-address field never carries
// out of the low word), each descriptor pair takes one 64-bit uniform add (UIADD3.64).
template <class Fragment>
__device__ __forceinline__ auto k_slice(const Fragment& t, int k) {
  using namespace cute;
  using Iterator = typename Fragment::iterator;
  if constexpr (std::is_base_of_v<GMMA::DescriptorIterator, Iterator>) {
    Iterator it = t.data();
    it.desc_.desc_ = t.data().desc_.desc_ + static_cast<std::uint64_t>(t.layout()(0, 0, k));
    return make_tensor(it, t(_, _, 0).layout());
  } else {
    return t(_, _, k);
  }
}

// One warpgroup GEMM batch: C (=|+=) A B over every k slice, issued asynchronously; the caller
// commits and waits. B's slices are always advanced with 64-bit adds; A's only with kWideA (Q's
// loop-invariant descriptors otherwise stay hoisted before the loop, which 64-bit adds undid:
// ptxas then recomputed them at every block, three instructions each).
template <bool kWideA = false, class TiledMma, class TA, class TB, class TC>
__device__ __forceinline__ void warpgroup_gemm(TiledMma& mma, const TA& a, const TB& b, TC& c,
                                               bool accumulate) {
  using namespace cute;
  mma.accumulate_ = accumulate ? GMMA::ScaleOut::One : GMMA::ScaleOut::Zero;
  warpgroup_fence_operand(c);
  warpgroup_arrive();
  CUTE_UNROLL
  for (int k = 0; k < size<2>(a); ++k) {
    if constexpr (kWideA)
      cute::gemm(mma, k_slice(a, k), k_slice(b, k), c);
    else
      cute::gemm(mma, a(_, _, k), k_slice(b, k), c);
    mma.accumulate_ = GMMA::ScaleOut::One;
  }
  warpgroup_commit_batch();
  warpgroup_fence_operand(c);
}

// The producer's loads. The loader (thread 0) issues every TMA copy, but for a paged cache whose
// pages are not whole K/V blocks, where every lane of its warp copies a share of each block's
// boxes; the warpgroup's other threads take part only in `between` (the hand-off, which every
// producer thread joins).
template <class Params>
class MainloopProducer {
  using Traits = typename Params::Traits;
  static constexpr int D = Traits::kHeadDim;
  static constexpr int kCluster = Traits::kClusterM;
  using SmemQ = decltype(cute::make_tensor(cute::make_smem_ptr(std::declval<Element*>()),
                                           typename Traits::SmemLayoutQ{}));
  using SmemKV = decltype(cute::make_tensor(cute::make_smem_ptr(std::declval<Element*>()),
                                            typename Traits::SmemLayoutKV{}));
  template <class Tma>
  using GmemTma =
      decltype(std::declval<const Tma&>().get_tma_tensor(cute::make_shape(0, cute::Int<D>{}, 0)));

 public:
  // The loader's first step, before anything else: the descriptors on their way into the cache.
  static __device__ __forceinline__ void prefetch_descriptors(const Params& p) {
    if (p.problem.decoding)
      cute::prefetch_tma_descriptor(&p.mainloop.decode_q);
    else
      cute::prefetch_tma_descriptor(p.mainloop.tma_q.get_tma_descriptor());
    if (p.problem.page_rows != 0) {
      cute::prefetch_tma_descriptor(&p.mainloop.page_rows_k);
      cute::prefetch_tma_descriptor(&p.mainloop.page_rows_v);
    } else {
      cute::prefetch_tma_descriptor(p.mainloop.tma_k.get_tma_descriptor());
      cute::prefetch_tma_descriptor(p.mainloop.tma_v.get_tma_descriptor());
    }
  }

  __device__ __forceinline__ MainloopProducer(const Params& p, MainloopBuffers<Traits>& buffers,
                                              MainloopStates<Traits>& writes, bool loader)
      : p_(p),
        writes_(writes),
        loader_(loader),
        // TMA coordinate tensors over the whole Q and K/V, (rows, d, heads), and the buffers.
        mQ_(p.mainloop.tma_q.get_tma_tensor(
            cute::make_shape(p.problem.q_rows, cute::Int<D>{}, int(p.problem.num_q_heads)))),
        mK_(p.mainloop.tma_k.get_tma_tensor(
            cute::make_shape(p.problem.kv_rows, cute::Int<D>{}, int(p.problem.num_kv_heads)))),
        mV_(p.mainloop.tma_v.get_tma_tensor(
            cute::make_shape(p.problem.kv_rows, cute::Int<D>{}, int(p.problem.num_kv_heads)))),
        sQ_(cute::make_tensor(cute::make_smem_ptr(buffers.q.data()),
                              typename Traits::SmemLayoutQ{})),
        sK_(cute::make_tensor(cute::make_smem_ptr(buffers.k.data()),
                              typename Traits::SmemLayoutKV{})),
        sV_(cute::make_tensor(cute::make_smem_ptr(buffers.v.data()),
                              typename Traits::SmemLayoutKV{})) {}

  // Whether this thread issues loads: the loader, and with page_boxes() the rest of its warp.
  __device__ __forceinline__ bool issues_loads() const {
    return loader_ || (page_boxes() && threadIdx.x < 32u);
  }

  // The loads of one tile, issued by the loader (with page_boxes() its warp's lanes join in the
  // K/V loads: issues_loads()): Q and the highest K block, then `between` (in every thread that
  // called this), then the rest of the K/V blocks in the consumers' order:
  // QK^T(last), then for each j below it QK^T(j) with PV(j + 1), finally PV(0). Loading K(j)
  // before V(j + 1) keeps the next GEMM's operand first. A piece of a tile (split_tail, split_kv,
  // stream_k) loads its blocks [kv_block_begin, kv_block_end) alike. `release` holds back a V
  // load into a stage that still holds a staged O (epilogue.cuh).
  template <class Pipelines, class Between>
  __device__ __forceinline__ void load_tile(Pipelines& pipes, OReleaseWait<Traits>& release,
                                            const SeqInfo& work, const TileGeometry& g,
                                            Between&& between) {
    using namespace cute;
    const bool loads = issues_loads() && has_work(g);
    const int kv_head = static_cast<int>(kv_head_of(p_.problem, work.head_idx));
    auto [tQg, tQs] = q_partition(work, g);
    // kClusterM 2: this CTA's half of each block (its rank's), multicast to both CTAs.
    [[maybe_unused]] const int rank =
        kCluster > 1 ? static_cast<int>(cute::block_rank_in_cluster()) : 0;
    const auto k_parts = kv_partition(p_.mainloop.tma_k, sK_, mK_, kv_head, g, rank);
    const auto v_parts = kv_partition(p_.mainloop.tma_v, sV_, mV_, kv_head, g, rank);
    const KvSource src{work.prompt_idx, g.kv_len, kv_head};
    const bool wait_o = release.waits();
    const int begin = first_kv_block<Params>(g);
    const int last = end_kv_block<Params>(g) - 1;
    int block = last;
    if (loads) {
      if (loader_) {
        producer_acquire(pipes.q, writes_.q, "Q buffer (producer)");
        if (p_.problem.decoding)
          load_decode_q(pipes.q.producer_get_barrier(writes_.q), work, g, writes_.q.index());
        else
          copy(p_.mainloop.tma_q.with(*pipes.q.producer_get_barrier(writes_.q)), tQg,
               tQs(_, writes_.q.index()));
      }
      ++writes_.q;
      load_k(pipes, k_parts, src, block);
    }
    between();
    if (loads) {
      for (; block > begin; --block) {
        load_k(pipes, k_parts, src, block - 1);
        load_v(pipes, release, v_parts, src, block, wait_o && block == last);
      }
      const u32 o_stage = static_cast<u32>(writes_.v.index());  // V(0)'s
      load_v(pipes, release, v_parts, src, begin, wait_o && begin == last);
      release.after_tile(o_stage);
    }
  }

  // In a cluster the other CTA's consumers release this CTA's stages (and its loads fill them):
  // the CTA stays until every stage it filled has been released by both, so no arrive lands on
  // an exited CTA.
  template <class Pipelines>
  __device__ __forceinline__ void tail(Pipelines& pipes) {
    if constexpr (kCluster > 1) {
      if (loader_) {
        pipes.k.producer_tail(writes_.k);
        pipes.v.producer_tail(writes_.v);
        pipes.q.producer_tail(writes_.q);
      }
    }
  }

 private:
  // Q: the tile's BM rows from its first row (a ragged tile need not start on a multiple of BM).
  // Rows past the tile's sequence are loaded but never stored; rows past the tensor are
  // zero-filled by the TMA.
  __device__ __forceinline__ auto q_partition(const SeqInfo& work, const TileGeometry& g) const {
    using namespace cute;
    const int head = static_cast<int>(work.head_idx);
    Tensor gQ = local_tile(
        domain_offset(make_coord(static_cast<int>(g.rows.first_query_row), _0{}), mQ_(_, _, head)),
        Shape<Int<Traits::kBlockM>, Int<D>>{}, make_coord(_0{}, _0{}));
    return tma_partition(p_.mainloop.tma_q, group_modes<0, 2>(sQ_), group_modes<0, 2>(gQ));
  }

  // A decode tile's Q (Problem::decoding) into Q buffer `buffer`: query head j of the tile's KV
  // head's group gets rows [T j, T j + T) (T = decode_tokens), its T rows of Q from the tile's
  // first, in boxes of kMaxDecodeTokens rows copied in d / 64 column slices by copy_row_slices (as
  // load_page_rows places a block's boxes). Rows of a head past the tile's tokens hold the rows of
  // Q that follow (or zeros past Q) and are never stored; the buffer's rows past the group's
  // heads are boxes past Q's last row, which the TMA fills with zeros, so that the buffer's byte
  // count is whole.
  __device__ __forceinline__ void load_decode_q(std::uint64_t* barrier, const SeqInfo& work,
                                                const TileGeometry& g, int buffer) const {
    constexpr int kBlockM = Traits::kBlockM;
    constexpr int kBox = static_cast<int>(kMaxDecodeTokens);
    static_assert(row_slices<kBlockM>(typename Traits::SmemLayoutQBuffer{}.layout_b()) &&
                      kBlockM % kBox == 0,
                  "a Q buffer is d / 64 column slices of BM rows of 64 elements, one after another");
    Element* const q = cute::raw_pointer_cast(sQ_.data()) + buffer * (kBlockM * D);
    const u32 group = p_.problem.group, log2_tokens = p_.problem.decode_tokens_log2;
    CUTE_UNROLL
    for (int box = 0; box < kBlockM / kBox; ++box) {
      const u32 slot = u32(box * kBox) >> log2_tokens;  // the box's query head in the group
      const u32 token = u32(box * kBox) & ((1u << log2_tokens) - 1u);
      const bool head = slot < group;
      const int q_head = head ? static_cast<int>(work.head_idx * group + slot) : 0;
      const int row = head ? static_cast<int>(g.rows.first_query_row + token) : p_.problem.q_rows;
      copy_row_slices<kBlockM>(p_.mainloop.decode_q, q, barrier, box * kBox, q_head, row);
    }
  }

  // Whether `layout` (a shared buffer's, before its swizzle, which CuTe like the TMA applies to
  // the address; its third mode, where it has one, a stage) is d / 64 column slices of kRows rows
  // of 64 elements, one after another: where row 8 and column 64 start (d = 64 has one slice:
  // column 0 then stands in).
  template <int kRows, class Layout>
  static constexpr bool row_slices(Layout layout) {
    constexpr int kSecondSlice = D > 64 ? 64 : 0;
    const auto at = [&](auto row, auto column) {
      if constexpr (decltype(cute::rank(layout))::value == 3)
        return layout(cute::make_coord(row, column, cute::_0{}));
      else
        return layout(cute::make_coord(row, column));
    };
    return at(cute::Int<8>{}, cute::_0{}) == 8 * 64 &&
           at(cute::_0{}, cute::Int<kSecondSlice>{}) == kRows * kSecondSlice;
  }

  // One TMA box of `desc` per d / 64 column slice: the box's rows from `src_row` of head `head`
  // (64 columns each) to rows [dst_row, ...) of `buffer`, a buffer that row_slices<kRows> holds
  // for. The Q of a decode tile and a paged cache's boxes of keys are placed this way.
  template <int kRows, class Row>
  static __device__ __forceinline__ void copy_row_slices(const cute::TmaDescriptor& desc,
                                                         Element* buffer, std::uint64_t* barrier,
                                                         Row dst_row, int head, int src_row) {
    constexpr std::uint64_t kEvictNormal =
        static_cast<std::uint64_t>(cute::TMA::CacheHintSm90::EVICT_NORMAL);
    CUTE_UNROLL
    for (int c = 0; c < D / 64; ++c)
      cute::SM90_TMA_LOAD_3D::copy(&desc, barrier, kEvictNormal,
                                   buffer + (c * kRows + dst_row) * 64, c * 64, head, src_row);
  }

  // K/V blocks of the sequence, (BN, d, block), as the TMA copies them into the stages; in a paged
  // cache the blocks of the whole cache, from its first row (cached() names a tile's). Keys past
  // the sequence's end may belong to the next sequence or be a page's unused rows: consumers mask
  // them (scores -inf, so P = 0 whatever V holds).
  template <class Tma, class Gmem>
  __device__ __forceinline__ auto kv_partition(const Tma& tma, const SmemKV& s, const Gmem& m,
                                               int kv_head, const TileGeometry& g,
                                               [[maybe_unused]] int rank) const {
    using namespace cute;
    Tensor blocks =
        local_tile(domain_offset(make_coord(p_.problem.page_table == nullptr
                                                ? static_cast<int>(g.kv_start)
                                                : 0,
                                            _0{}),
                                 m(_, _, kv_head)),
                   Shape<Int<Traits::kBlockN>, Int<D>>{}, make_coord(_, _0{}));
    if constexpr (kCluster > 1)
      return tma_partition(tma, rank, Layout<Int<kCluster>>{}, group_modes<0, 2>(s),
                           group_modes<0, 2>(blocks));
    else
      return tma_partition(tma, group_modes<0, 2>(s), group_modes<0, 2>(blocks));
  }

  // What locates a tile's K/V blocks: its sequence (and that sequence's keys) and KV head.
  struct KvSource {
    u32 prompt;
    u32 kv_len;
    int kv_head;
  };

  // A paged cache whose pages are not whole K/V blocks (Problem::page_rows), loaded box by box by
  // the loader's warp; a cluster's CTAs load halves of whole blocks and take no such cache.
  __device__ __forceinline__ bool page_boxes() const {
    return kCluster == 1 && p_.problem.page_rows != 0;
  }

  // Where a tile's K/V block is among kv_partition's blocks (a paged cache's page).
  __device__ __forceinline__ int cached(const KvSource& src, int block) const {
    return kv_block_in_cache(p_.problem, src.prompt, block);
  }

  // A paged cache whose pages are not whole K/V blocks: a block is BN / page_rows boxes of
  // page_rows keys, each from the page that holds it, and the loader's warp shares them out: lane
  // l copies boxes l, l + 32, ... (kLaneBoxes at most). Its rows in the cache, looked up before the
  // stage wait so that the page table's latency overlaps it; the 32 lanes' reads of one block's
  // page numbers are one request, where one thread looking them up a few at a time waited on a
  // read per few boxes (docs/gpu-performance.md, "Paged caches: the loader's warp shares the
  // boxes"). Keys past the sequence are not looked up: their boxes start past the cache's last
  // row and the TMA fills them with zeros (the consumers mask those keys).
  static constexpr int kLaneBoxes = (Traits::kBlockN + 31) / 32;
  struct LaneBoxRows {
    std::int32_t row[kLaneBoxes];
  };
  __device__ __forceinline__ LaneBoxRows look_up_boxes(const KvSource& src, int block) const {
    const Problem& pr = p_.problem;
    const u32 rows = pr.page_rows, page_size = pr.page_size;
    const u32 boxes = u32(Traits::kBlockN) / rows, lane = threadIdx.x % 32u;
    const std::int32_t* table = pr.page_table + std::size_t(src.prompt) * pr.page_stride;
    const u32 first_key = static_cast<u32>(block) * Traits::kBlockN;
    LaneBoxRows out;
    CUTE_UNROLL
    for (int i = 0; i < kLaneBoxes; ++i) {
      // page_rows divides the page size and BN: a box lies in one page.
      const u32 box = lane + 32u * u32(i), key = first_key + box * rows;
      out.row[i] = pr.kv_rows;  // past the cache: zero-filled
      if (box < boxes && key < src.kv_len) {
        const u32 page = key / page_size;
        const std::int64_t cache_row =
            std::int64_t(__ldg(table + page)) * page_size + (key - page * page_size);
        if (cache_row >= 0 && cache_row < pr.kv_rows)
          out.row[i] = static_cast<std::int32_t>(cache_row);
      }
    }
    return out;
  }

  // This lane's boxes of a K/V block of a paged cache whose pages are not whole K/V blocks, into
  // `stage`, every box in d / 64 column slices of 128 bytes. A slice's rows go where the whole
  // block's box would put them (column slice c of the stage's (BN, d) tile starts at row 0 of
  // slice c, BN rows of 128 bytes each; the swizzle is the address's). Every lane has waited for
  // the stage and thread 0 has armed its barrier with the whole block's bytes (the __syncwarp
  // orders that before any lane's copy).
  __device__ __forceinline__ void load_page_rows(const cute::TmaDescriptor& desc, Element* stage,
                                                 std::uint64_t* barrier, const KvSource& src,
                                                 const LaneBoxRows& rows) const {
    constexpr auto layout = typename Traits::SmemLayoutKV{}.layout_b();
    static_assert(row_slices<Traits::kBlockN>(layout) &&
                      layout(cute::make_coord(cute::_0{}, cute::_0{}, cute::_1{})) ==
                          Traits::kBlockN * D,
                  "a stage is d / 64 column slices of BN rows of 64 elements, one after another");
    __syncwarp();
    const u32 box_rows = p_.problem.page_rows;
    const u32 boxes = u32(Traits::kBlockN) / box_rows, lane = threadIdx.x % 32u;
    CUTE_UNROLL
    for (int i = 0; i < kLaneBoxes; ++i) {
      const u32 box = lane + 32u * u32(i);
      if (box < boxes)
        copy_row_slices<Traits::kBlockN>(desc, stage, barrier, box * box_rows, src.kv_head,
                                         rows.row[i]);
    }
  }

  // The copy of one stage, multicast to the cluster's CTAs where there is one.
  template <class Tma, class Barrier>
  static __device__ __forceinline__ auto kv_tma(const Tma& tma, Barrier& barrier) {
    if constexpr (kCluster > 1)
      return tma.with(barrier, static_cast<std::uint16_t>((1u << kCluster) - 1u));
    else
      return tma.with(barrier);
  }

  template <class Pipelines, class Parts>
  __device__ __forceinline__ void load_k(Pipelines& pipes, const Parts& k_parts,
                                         const KvSource& src, int block) {
    using namespace cute;
    if (page_boxes()) {
      const LaneBoxRows rows = look_up_boxes(src, block);
      producer_acquire(pipes.k, writes_.k, "K stage (producer)");
      load_page_rows(p_.mainloop.page_rows_k, stage_of(sK_, writes_.k.index()),
                     pipes.k.producer_get_barrier(writes_.k), src, rows);
    } else {
      producer_acquire(pipes.k, writes_.k, "K stage (producer)");
      copy(kv_tma(p_.mainloop.tma_k, *pipes.k.producer_get_barrier(writes_.k)),
           get<0>(k_parts)(_, cached(src, block)), get<1>(k_parts)(_, writes_.k.index()));
    }
    ++writes_.k;
  }

  // The first element of a K or V stage.
  static __device__ __forceinline__ Element* stage_of(const SmemKV& s, int stage) {
    return cute::raw_pointer_cast(s.data()) + stage * (Traits::kBlockN * D);
  }

  // `wait_o`: the tile's first V load, which waits for the previous tile's staged O (InV).
  template <class Pipelines, class Parts>
  __device__ __forceinline__ void load_v(Pipelines& pipes, OReleaseWait<Traits>& release,
                                         const Parts& v_parts, const KvSource& src, int block,
                                         bool wait_o) {
    using namespace cute;
    if (page_boxes()) {
      const LaneBoxRows rows = look_up_boxes(src, block);
      release.before_v_load(wait_o, static_cast<u32>(writes_.v.index()));
      producer_acquire(pipes.v, writes_.v, "V stage (producer)");
      load_page_rows(p_.mainloop.page_rows_v, stage_of(sV_, writes_.v.index()),
                     pipes.v.producer_get_barrier(writes_.v), src, rows);
    } else {
      release.before_v_load(wait_o, static_cast<u32>(writes_.v.index()));
      producer_acquire(pipes.v, writes_.v, "V stage (producer)");
      copy(kv_tma(p_.mainloop.tma_v, *pipes.v.producer_get_barrier(writes_.v)),
           get<0>(v_parts)(_, cached(src, block)), get<1>(v_parts)(_, writes_.v.index()));
    }
    ++writes_.v;
  }

  const Params& p_;
  MainloopStates<Traits>& writes_;
  bool loader_;  // the TMA-issuing thread, also the scheduler's thread 0
  GmemTma<typename Traits::TmaQ> mQ_;
  GmemTma<typename Traits::TmaKV> mK_;
  GmemTma<typename Traits::TmaKV> mV_;
  SmemQ sQ_;
  SmemKV sK_;
  SmemKV sV_;
};

// One consumer warpgroup's K/V loop over the tiles it processes: its operands (this warpgroup's
// 64 Q rows of every Q buffer, every K stage, every V stage read as (d, keys), as wgmma
// descriptors), its S and P fragments, and the read states of the Q, K and V pipelines.
template <class Params>
class MainloopConsumer {
  using Traits = typename Params::Traits;
  static constexpr int D = Traits::kHeadDim;
  static constexpr int kBlockN = Traits::kBlockN;
  static constexpr int kRows = Traits::kWarpgroupRows;
  static constexpr int kNarrowN = Traits::kNarrowN;
  using PipelineKV = typename Traits::PipelineKV;
  using TiledMmaQK = typename Traits::TiledMmaQK;
  using TiledMmaPV = typename Traits::TiledMmaPV;
  using TiledMmaQKNarrow = typename Traits::TiledMmaQKNarrow;
  using ThrQK = decltype(std::declval<TiledMmaQK&>().get_thread_slice(0));
  using ThrPV = decltype(std::declval<TiledMmaPV&>().get_thread_slice(0));
  using SmemQRows = decltype(cute::local_tile(
      cute::make_tensor(cute::make_smem_ptr(std::declval<Element*>()),
                        typename Traits::SmemLayoutQ{}),
      cute::Shape<cute::Int<kRows>, cute::Int<D>, cute::Int<Traits::kStagesQ>>{},
      cute::make_coord(0, cute::_0{}, cute::_0{})));
  using SmemK = decltype(cute::make_tensor(cute::make_smem_ptr(std::declval<Element*>()),
                                           typename Traits::SmemLayoutKV{}));
  using SmemVt = decltype(cute::make_tensor(cute::make_smem_ptr(std::declval<Element*>()),
                                            typename Traits::SmemLayoutVt{}));
  using OperandQ =
      decltype(std::declval<ThrQK&>().partition_fragment_A(std::declval<SmemQRows&>()));
  using OperandK = decltype(std::declval<ThrQK&>().partition_fragment_B(std::declval<SmemK&>()));
  using OperandV = decltype(std::declval<ThrPV&>().partition_fragment_B(std::declval<SmemVt&>()));
  using FragmentS = decltype(cute::partition_fragment_C(
      std::declval<TiledMmaQK&>(), cute::Shape<cute::Int<kRows>, cute::Int<kBlockN>>{}));
  using FragmentSNarrow = decltype(cute::partition_fragment_C(
      std::declval<TiledMmaQKNarrow&>(), cute::Shape<cute::Int<kRows>, cute::Int<kNarrowN>>{}));
  using FragmentP = decltype(cute::make_tensor<Element>(cute::partition_shape_A(
      std::declval<TiledMmaPV&>(), cute::Shape<cute::Int<kRows>, cute::Int<kBlockN>>{})));

 public:
  using FragmentO = decltype(cute::partition_fragment_C(
      std::declval<TiledMmaPV&>(), cute::Shape<cute::Int<kRows>, cute::Int<D>>{}));
  static_assert(cute::size(FragmentS{}) == kBlockN / 2 && cute::size(FragmentO{}) == D / 2,
                "one warpgroup's 64 rows: N / 2 accumulators per thread");

  // What the K/V loop leaves for the epilogue besides O.
  struct TileResult {
    RowState rs;
    typename PipelineKV::PipelineState v_last;  // the fill that held V(0)
  };

  __device__ __forceinline__ MainloopConsumer(const Params& p, MainloopBuffers<Traits>& buffers,
                                              int warpgroup, int thread)
      : p_(p),
        tSrQ_(qk_slice(thread).partition_fragment_A(cute::local_tile(
            cute::make_tensor(cute::make_smem_ptr(buffers.q.data()),
                              typename Traits::SmemLayoutQ{}),
            cute::Shape<cute::Int<kRows>, cute::Int<D>, cute::Int<Traits::kStagesQ>>{},
            cute::make_coord(warpgroup, cute::_0{}, cute::_0{})))),  // (MMA, MMA_M, MMA_K, buffer)
        tSrK_(qk_slice(thread).partition_fragment_B(cute::make_tensor(
            cute::make_smem_ptr(buffers.k.data()), typename Traits::SmemLayoutKV{}))),
        tOrV_(pv_slice(thread).partition_fragment_B(cute::make_tensor(
            cute::make_smem_ptr(buffers.v.data()), typename Traits::SmemLayoutVt{}))) {}

  // The unnormalized O of the tile run last.
  __device__ __forceinline__ const FragmentO& o() const { return o_; }

  // One tile's K/V blocks, from the tile's Q in its buffer: O (cleared first) and each row's
  // softmax state. `under_last_pv` runs while the tile's last PV is in flight (kPrefetchTile:
  // the next tile's receipt).
  template <class Pipelines, class Turns, class UnderLastPv>
  __device__ __forceinline__ TileResult run(Pipelines& pipes, MainloopStates<Traits>& reads,
                                            MainloopWords& words, const TileGeometry& g,
                                            const TileMask<Params>& mask, const Turns& turns,
                                            UnderLastPv&& under_last_pv) {
    KvLoop loop;
    loop.rs = RowState{{-INFINITY, -INFINITY}, {0.f, 0.f}};
    // Never true (validate() bounds the rows), but ptxas cannot know: the PV wait's pinning store
    // and kRebuildQOperand's q_step depend on it.
    loop.never = p_.problem.q_rows < 0;
    cute::clear(o_);
    // The blocks [kv_block_begin, kv_block_end): all of the tile's but for a piece's.
    loop.begin = first_kv_block<Params>(g);
    loop.block = end_kv_block<Params>(g) - 1;
    consumer_wait(pipes.q, reads.q, "Q buffer (consumer)");
    loop.q_buffer = reads.q.index();
    loop.q_desc = tSrQ_(cute::_, cute::_, cute::_, loop.q_buffer).data().desc_.desc_;
    loop.q_step = loop.never ? 1u : 0u;
    first_block(pipes, reads, loop, mask, turns);
    // The blocks that need the mask are the highest ones (mask.needs grows with the block), so
    // they come first: one loop runs them with the mask, a second runs the rest without testing
    // for it (the test took about 10 instructions and a branch per block; "Masked and mask-free
    // K/V loops").
    for (--loop.block; loop.block >= loop.begin && mask.needs(loop.block); --loop.block)
      kv_block(pipes, reads, words, loop, mask, turns, std::true_type{});
    for (; loop.block >= loop.begin; --loop.block)
      kv_block(pipes, reads, words, loop, mask, turns, std::false_type{});
    // Block 0's PV.
    turns.wait_turn();
    consumer_wait(pipes.v, reads.v, "V stage (consumer)");
    warpgroup_gemm(mma_pv_, tOrP_, tOrV_(cute::_, cute::_, cute::_, reads.v.index()), o_, true);
    turns.pass_turn();
    if constexpr (Traits::kPrefetchTile) under_last_pv();
    cute::warpgroup_wait<0>();
    pipes.v.consumer_release(reads.v);
    const auto v_last = reads.v;
    ++reads.v;
    ++reads.q;
    return TileResult{loop.rs, v_last};
  }

 private:
  // The state of one tile's K/V loop.
  struct KvLoop {
    RowState rs;
    bool never;
    float alpha[2];  // each row's rescale factor for O, from the last softmax
    int begin;       // the first block
    int block;       // the block being run
    int q_buffer;
    std::uint64_t q_desc;
    std::uint64_t q_step;
  };

  __device__ __forceinline__ static ThrQK qk_slice(int thread) {
    return TiledMmaQK{}.get_thread_slice(thread);
  }
  __device__ __forceinline__ static ThrPV pv_slice(int thread) {
    return TiledMmaPV{}.get_thread_slice(thread);
  }

  // The loop's QK^T operand. By default its descriptors (a register pair per k slice) are made
  // once, before the loop, in uniform registers. With kRebuildQOperand the loop makes them at
  // every block, one 64-bit uniform add each, from the Q buffer's descriptor carried through the
  // loop: it moves by q_step at every block, which is 0 (`never`) but not to ptxas, so the 16
  // descriptors of d = 256 are not hoisted out of the loop, where they had pushed it into local
  // memory (184 bytes of spills; "Operand descriptors").
  __device__ __forceinline__ auto q_operand_in_loop(KvLoop& loop) {
    using namespace cute;
    if constexpr (Traits::kRebuildQOperand) {
      loop.q_desc += loop.q_step;
      auto it = tSrQ_(_, _, _, 0).data();
      it.desc_.desc_ = loop.q_desc;
      return make_tensor(it, tSrQ_(_, _, _, 0).layout());
    } else {
      return tSrQ_(_, _, _, loop.q_buffer);
    }
  }

  // The tile's first (highest) block: S only, once the tile's Q has arrived, in this warpgroup's
  // turn. Narrow where the configuration has it (kNarrowFirst) and the warpgroup's rows see none
  // of the block's keys past its first kNarrowN (a causal diagonal or the key tail inside the
  // block): its QK^T and softmax run over those keys only, and P's other weights are 0. The PV
  // stays whole (a PV of fewer k slices, or none, in one iteration made ptxas serialize the
  // loops' wgmma). Only the first block can be narrow: the tile's rows reach at most BM - 64 <= BN
  // keys further than the warpgroup's ("Narrow first block").
  template <class Pipelines, class Turns>
  __device__ __forceinline__ void first_block(Pipelines& pipes, MainloopStates<Traits>& reads,
                                              KvLoop& loop, const TileMask<Params>& mask,
                                              const Turns& turns) {
    using namespace cute;
    const int block = loop.block;
    const u32 first_key0 = static_cast<u32>(block) * kBlockN;
    bool narrow = false;
    // (Not in the kernels of the kinds that hand out pieces: split_tail's then kept S in local
    // memory.)
    if constexpr (Traits::kNarrowFirst && !kHandsOutPieces<Params>)
      narrow = mask.visible_end() <= first_key0 + kNarrowN;
    turns.wait_turn();
    consumer_wait(pipes.k, reads.k, "K stage (consumer)");
    if (narrow)
      warpgroup_gemm(mma_qk_narrow_, tSrQ_(_, _, _, loop.q_buffer), tSrK_(_, _, _, reads.k.index()),
                     tSrS_narrow_, false);
    else
      warpgroup_gemm(mma_qk_, tSrQ_(_, _, _, loop.q_buffer), tSrK_(_, _, _, reads.k.index()), tSrS_,
                     false);
    turns.pass_turn();
    warpgroup_wait<0>();
    pipes.k.consumer_release(reads.k);
    ++reads.k;
    if (block == loop.begin) pipes.q.consumer_release(reads.q);
    if (narrow) {
      // Keys past kNarrowN lie past some row's last, so a narrow block needs the mask.
      mask.apply(tSrS_narrow_, first_key0);
      softmax_block(tSrS_narrow_, loop.rs, p_.softmax.scale_log2, loop.alpha);
      convert_to_p(tSrS_narrow_, tOrP_);
      CUTE_UNROLL
      for (int e = kNarrowN / 2; e < size(tOrP_); ++e) tOrP_(e) = Element(0.f);
    } else {
      if (mask.needs(block)) mask.apply(tSrS_, first_key0);
      softmax_block(tSrS_, loop.rs, p_.softmax.scale_log2, loop.alpha);
      convert_to_p(tSrS_, tOrP_);
    }
  }

  // O's rescale by the last softmax's alpha, before the PV that accumulates its P.
  __device__ __forceinline__ void rescale_o(const KvLoop& loop) {
    if constexpr (Traits::kSkipUnitRescale || Traits::kRescaleThreshold > 0) {
      // Once a row's max settles (long rows: most blocks), alpha is exactly 1.
      if (__any_sync(0xffffffffu, loop.alpha[0] != 1.f || loop.alpha[1] != 1.f))
        rescale_rows(o_, loop.alpha);
    } else {
      rescale_rows(o_, loop.alpha);
    }
  }

  // A block below the first: S of this block with O += P V of the block above in flight.
  template <class Pipelines, class Turns, class Masked>
  __device__ __forceinline__ void kv_block(Pipelines& pipes, MainloopStates<Traits>& reads,
                                           MainloopWords& words, KvLoop& loop,
                                           const TileMask<Params>& mask, const Turns& turns,
                                           Masked) {
    using namespace cute;
    const int block = loop.block;
    turns.wait_turn();
    consumer_wait(pipes.k, reads.k, "K stage (consumer)");
    warpgroup_gemm<Traits::kRebuildQOperand>(mma_qk_, q_operand_in_loop(loop),
                                             tSrK_(_, _, _, reads.k.index()), tSrS_, false);
    consumer_wait(pipes.v, reads.v, "V stage (consumer)");
    warpgroup_gemm(mma_pv_, tOrP_, tOrV_(_, _, _, reads.v.index()), o_, true);
    turns.pass_turn();
    warpgroup_wait<1>();  // S ready; PV may still run
    pipes.k.consumer_release(reads.k);
    ++reads.k;
    if (block == loop.begin) pipes.q.consumer_release(reads.q);
    if constexpr (Masked::value) mask.apply(tSrS_, static_cast<u32>(block) * kBlockN);
    // A masked block's row max runs while the PV is in flight, and the wait for the PV comes after
    // it ("The PV wait after the row max"). ptxas moves the wait (WARPGROUP.DEPBAR) up to the top
    // of its basic block, right after the mask, unless something holds it: it keeps a
    // shared-memory store before the wait, so a store of a softmax result, on a condition that
    // never holds but that ptxas cannot prove, pins the wait after that result.
    [[maybe_unused]] float base[2];  // the softmax's second part subtracts it
    if constexpr (Masked::value) {
      softmax_max<Traits::kRescaleThreshold>(tSrS_, loop.rs, p_.softmax.scale_log2, loop.alpha,
                                             base);
      if (loop.never) words.never_written = __float_as_uint(base[0]) ^ __float_as_uint(base[1]);
    }
    warpgroup_wait<0>();  // PV done: its P and V stage are free, O may be rescaled
    pipes.v.consumer_release(reads.v);
    ++reads.v;
    if constexpr (Masked::value) {
      rescale_o(loop);
      softmax_exp(tSrS_, loop.rs, p_.softmax.scale_log2, loop.alpha, base);
      convert_to_p(tSrS_, tOrP_);
    } else {
      // A block no mask touches takes no row max: its weights against the row's held max, after
      // the PV's wait ("Held max").
      softmax_held<Traits::kRescaleThreshold>(tSrS_, tOrP_, o_, loop.rs, p_.softmax.scale_log2);
    }
  }

  const Params& p_;
  TiledMmaQK mma_qk_;
  TiledMmaPV mma_pv_;
  OperandQ tSrQ_;
  OperandK tSrK_;
  OperandV tOrV_;
  FragmentS tSrS_;
  FragmentO o_;
  FragmentP tOrP_;
  // The narrow first block's QK^T over a K stage's first kNarrowN keys. Its operands are the full
  // GEMM's descriptors (a wgmma's N is its instruction's, not its operands'), its accumulator S's
  // first kNarrowN columns, an owning fragment of their kNarrowN / 2 elements in S's order
  // (element e covers column 8 (e / 4) + ...). Views of S's registers instead sent S to local
  // memory.
  TiledMmaQKNarrow mma_qk_narrow_;
  FragmentSNarrow tSrS_narrow_;
};

}  // namespace tilesched::gpu::sm90
