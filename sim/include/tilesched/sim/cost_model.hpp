// Predicted time of one work tile on one SM, from its KV-block counts (SPEC §7):
//   time = fixed_us + us_per_block * unmasked_blocks + us_per_masked_block * masked_blocks
// with coefficients per head_dim and device, and what the device is (SPEC §8): its SM count, its
// L2 size, and per head_dim how many CTAs of the kernel an SM holds and how fast each of them
// progresses while it shares the SM. Defaults live in sim/data/cost_<device>.json and are compiled
// into the library, so the tool works from any directory.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tilesched/geometry.hpp"
#include "tilesched/trace.hpp"
#include "tilesched/workload.hpp"

namespace tilesched::sim {

// One head_dim's coefficients, all in microseconds.
struct CostCoefficients {
  double fixed_us = 0;             // per tile: prologue, Q load, epilogue, scheduler step
  double us_per_block = 0;         // per BN-wide KV block with no masked element
  double us_per_masked_block = 0;  // per KV block that needs the mask (diagonal or key tail)

  // Predicted time of a tile with these KV-block counts (the formula above).
  double tile_time_us(const TileCost& c) const {
    return fixed_us + us_per_block * double(c.kv_blocks - c.masked_blocks) +
           us_per_masked_block * double(c.masked_blocks);
  }

  bool operator==(const CostCoefficients& o) const {
    return fixed_us == o.fixed_us && us_per_block == o.us_per_block &&
           us_per_masked_block == o.us_per_masked_block;
  }
};

// How a head_dim's kernel shares an SM (SPEC §8). With k of its resident CTAs busy, each one
// progresses at rate(k) tiles-worth of its solo time per unit of time (processor sharing): a tile
// that takes t µs alone takes t / rate(2) µs while another CTA is busy on its SM all along.
struct SmSharing {
  u32 ctas_per_sm = 1;  // CTAs of the kernel one SM holds at once (occupancy)
  // rate(k) for k = 2 .. ctas_per_sm, each in (0, 1]; rate(1) = 1. Empty when ctas_per_sm is 1.
  std::vector<double> shared_rates;

  // Rate of each busy CTA when `busy` CTAs of one SM are busy. Beyond the table (a what-if that
  // packs more CTAs on an SM than the kernel allows) the SM's total throughput stays at the
  // table's last value: rate(k) = ctas_per_sm * rate(ctas_per_sm) / k.
  double rate(u32 busy) const;

  bool operator==(const SmSharing& o) const {
    return ctas_per_sm == o.ctas_per_sm && shared_rates == o.shared_rates;
  }
};

struct CostModel {
  // Version 1 files predate the device fields; they read as this device with one CTA per SM for
  // every head_dim, which is what version 1 modelled.
  static constexpr u32 kDefaultMultiprocessors = 132;
  static constexpr std::uint64_t kDefaultL2Bytes = 50ull << 20;

  std::string device;                             // "h200", "h100", or a measured device name
  u32 multiprocessors = kDefaultMultiprocessors;  // SMs
  std::uint64_t l2_bytes = kDefaultL2Bytes;       // L2 cache size in bytes
  std::map<u32, CostCoefficients> by_head_dim;    // at least one entry
  // Keys per KV block of the traces the coefficients were fitted on (version 5; the workloads'
  // BN, which need not be the kernel's own). The per-block costs are per block of this many
  // keys: a workload of another BN is costed with them scaled by its BN / block_n
  // (coefficients(const Workload&)), as a block's work grows with its keys. 0: not recorded
  // (files before version 5, tables built in code): per block of whatever BN the workload has.
  u32 block_n = 0;
  // The tile height (BM) each by_head_dim entry was measured at, where the table says (version
  // 4); a head_dim missing here has coefficients of no recorded height.
  std::map<u32, u32> block_m_by_head_dim;
  // Coefficients of other tile heights at a head_dim (version 4): by_tile_height[d][bm] serves the
  // workloads of head_dim d and BM bm, by_head_dim[d] every other BM. A kernel that runs several
  // tile heights at one head dim (d = 64 at BM 128 and 192) costs differently per block at each.
  std::map<u32, std::map<u32, CostCoefficients>> by_tile_height;
  // Coefficients of one scheduler kind's kernel at a head_dim (version 6): by_scheduler[d][kind]
  // serves the workloads of head_dim d, scheduler `kind` and the entry's own tile height
  // (block_m_by_head_dim[d]; any BM where the entry records none), ahead of by_head_dim[d]. The
  // GPU builds a kernel of its own for some kinds, and where one differs from the kernel the
  // entry was measured on (d = 128's queued kernel runs a narrow first block), its tiles cost
  // differently.
  std::map<u32, std::map<SchedulerKind, CostCoefficients>> by_scheduler;
  // Paged KV caches (version 7): paged_by_head_dim[d][boxes] multiplies the per-block costs
  // (us_per_block, us_per_masked_block; not fixed_us) of the paged workloads of head_dim d whose
  // K/V blocks load as `boxes` TMA boxes (kv_block_boxes(page_size, BN): BN / gcd(page_size, BN),
  // 1 for pages of whole blocks). A block of many small boxes issues many copies, each after a
  // page-table read, where a contiguous block issues one; whether the
  // mainloop hides them depends on the head dim's arithmetic per block, so the factor is per head
  // dim and is never interpolated across head dims. paged_factor() says which factor a workload
  // gets. Empty: paged workloads cost like contiguous ones.
  std::map<u32, std::map<u32, double>> paged_by_head_dim;
  // Occupancy and sharing per head_dim; a head_dim missing here has one CTA per SM.
  std::map<u32, SmSharing> sharing_by_head_dim;
  // CTA launch per head_dim, µs (SPEC §8): how long a CTA that starts in a freed resident slot
  // holds it before its first tile starts, beyond the hand-off between tiles that fixed_us holds
  // (the block scheduler's dispatch, the kernel's prologue). A CTA with no tile to process holds
  // its slot this long and exits. Only a grid larger than the resident slots refills a slot: a
  // transient grid for every CTA after the first wave, a persistent grid of C <= slots never.
  // Empty (version 1 and 2 files): CTAs start the moment a slot frees.
  std::map<u32, double> cta_launch_us_by_head_dim;
  // The device's HBM bandwidth, bytes per µs: what a table gives (hbm_gbps, version 8: fitted
  // to decode traces of the device), else 4.8 TB/s, the H200's nominal. The decode tiles
  // streaming at once share it (the replay's placement), and the combine of split tiles streams
  // at it.
  static constexpr double kDefaultHbmBytesPerUs = 4.8e6;
  double hbm_bytes_per_us = kDefaultHbmBytesPerUs;
  // What a piece of a split tile takes beyond a tile of its blocks, per query row it owns, by
  // head dim (version 8; saved_row_us() looks one up): the piece saves its partial state (O
  // unscaled, in fp32, and each row's max and sum) for the combine where a whole tile stores O
  // in bf16 (gpu/src/sm90/combine.cuh). Empty: pieces cost as tiles of their blocks.
  std::map<u32, double> saved_row_us_by_head_dim;
  // The combine of split tiles (combine_time_us): each of its CTAs adds one split tile's pieces
  // one after another, so at decode sizes its longest loop, not its bytes, sets its time:
  // combine_fixed_us + a per-piece cost times the pieces of the tile with the most. A decode tile
  // of one new token spreads its pieces over a warp's lane groups (docs/gpu-kernel.md), hence its
  // own, smaller per-piece cost. Measured, not carried by files: docs/sim-cost-model.md, "The
  // combine of split tiles".
  double combine_fixed_us = 2.2;
  double combine_us_per_piece = 1.0;
  double combine_us_per_piece_one_token = 0.227;
  // The combine's blocks one SM holds at once, by head dim: 128 threads each, of 78, 128 and 176
  // registers at d = 64, 128 and 256 (ptxas -v, nvcc 13.0), against an SM's 64K registers. Split
  // tiles whose blocks outnumber multiprocessors x this run the combine's loop in waves.
  std::map<u32, u32> combine_ctas_per_sm = {{64, 6}, {128, 4}, {256, 2}};
  // The entry of `head_dim`, else of the nearest larger head dim (a smaller one holds fewer
  // accumulators), else the largest one's.
  u32 combine_blocks_per_sm(u32 head_dim) const;

  // Coefficients for `head_dim`: the table entry when present; otherwise linear interpolation
  // between the neighbouring entries, or proportional scaling of the nearest one outside the
  // table (work per block grows linearly with head_dim).
  CostCoefficients coefficients(u32 head_dim) const;
  // Coefficients for tiles of height `block_m` at `head_dim`: the by_tile_height entry when the
  // table has one for exactly that pair, else coefficients(head_dim) (unscaled: a height the
  // table does not list is costed like the head_dim's own entry).
  CostCoefficients coefficients(u32 head_dim, u32 block_m) const;
  // Coefficients for the tiles of scheduler `kind` at `head_dim` and `block_m`: the by_scheduler
  // entry when the table has one for that head_dim and kind and block_m is the entry's own tile
  // height (or the entry records none), else coefficients(head_dim, block_m).
  CostCoefficients coefficients(u32 head_dim, u32 block_m, SchedulerKind kind) const;

  // Coefficients for the tiles of workload `w`: coefficients(w.head_dim, w.block_m, w.scheduler)
  // with the per-block costs scaled to w.block_n keys per block (unchanged when it is the table's
  // own block_n, or the table has none) and, for a paged cache, times paged_factor(w). The
  // replay, the planned schedules, `recommend` and tile_time_us cost tiles with these.
  CostCoefficients coefficients(const Workload& w) const;

  // The factor on the per-block costs of workload `w`'s tiles: 1 without pages (page_size 0: the
  // table's coefficients are fitted on contiguous caches, so they are the contiguous cost
  // exactly), else paged_factor(w.head_dim, kv_block_boxes(w.page_size, w.block_n)).
  double paged_factor(const Workload& w) const;
  // The factor for blocks of `boxes` TMA boxes at `head_dim`: the entry for exactly that count;
  // between two entries, linear in log2(boxes) (the counts span two orders of magnitude, 1 .. 128
  // at BN 128, mostly powers of two apart: equal ratios are equal steps); below the first
  // or above the last entry, the nearest one (no trend is extrapolated past what was measured);
  // 1 where the head dim has no entries.
  double paged_factor(u32 head_dim, u32 boxes) const;

  // This table with its per-block costs (of every head dim and tile height) per block of
  // `keys` keys, scaled by keys / block_n, and block_n = keys; a table without block_n only
  // takes the value (its costs already count blocks of whatever size).
  CostModel with_block_n(u32 keys) const;

  // Whether the table holds coefficients measured at tile height `block_m` for `head_dim`: the
  // entry's own block_m or one of its tile_heights. Choosing between tile heights needs that: a
  // table that costs every height alike favours the tallest tile (fewer tiles, same cost each).
  bool measured_at(u32 head_dim, u32 block_m) const;

  // Predicted time of a tile with cost `c` for workload `w` (coefficients(w): its head_dim, BM
  // and BN).
  double tile_time_us(const Workload& w, const TileCost& c) const;

  // Occupancy and sharing for `head_dim`: the table entry when present, else the nearest entry of
  // a larger head_dim (a smaller head_dim needs no more shared memory or registers, so it fits at
  // least as many CTAs), else the largest one; one CTA per SM when the table is empty.
  SmSharing sharing(u32 head_dim) const;
  // CTA launch time for `head_dim`: the table entry when present; otherwise linear interpolation
  // between the neighbouring entries, or the nearest entry outside the table (a launch does no
  // work that grows with head_dim); 0 when the table has none.
  double cta_launch_us(u32 head_dim) const;
  // The cost of saving one row of a piece's partial output at `head_dim`: the table entry when
  // present; otherwise linear interpolation between the neighbouring entries, or the nearest
  // entry outside the table scaled in proportion (a row's state grows with head_dim); 0 when the
  // table has none.
  double saved_row_us(u32 head_dim) const;
  // What a piece with `rows` query rows (for each query head of its tile: rows x heads) takes
  // beyond a tile of its blocks at `head_dim`.
  double piece_save_us(u32 head_dim, u32 rows) const { return saved_row_us(head_dim) * rows; }
  // CTAs the device runs at once for `head_dim`: multiprocessors x ctas_per_sm. The default
  // num_ctas of a persistent grid that fills the device, and the transient grid's resident slots.
  u32 resident_ctas(u32 head_dim) const { return multiprocessors * sharing(head_dim).ctas_per_sm; }

  // Predicted time of the combine that finishes the split tiles of `events` (a trace's, whose
  // pieces name their KV block ranges): one launch after the kernel (cta_launch_us), then the
  // longer of its bytes (every piece's partial O and LSE read in fp32, each split tile's rows of
  // O (bf16) and LSE (fp32) written once) at hbm_bytes_per_us and its longest loop over one tile's
  // pieces (combine_fixed_us and the per-piece costs) once per wave of its blocks (one per
  // warpgroup of rows a split tile owns, combine_ctas_per_sm per SM). 0 when no tile is split.
  double combine_time_us(const Workload& w, const std::vector<TraceEvent>& events) const;

  // The least time in which the decode tiles of `events` read their K and V from HBM: the sum
  // of their stream_bytes at hbm_bytes_per_us. 0 for a workload without decode tiles. No replay
  // ends sooner: its streaming tiles share the bandwidth (docs/sim-cost-model.md, "Decode tiles
  // share the HBM").
  double decode_stream_us(const Workload& w, const std::vector<TraceEvent>& events) const;

  // A compiled-in profile: one of the sim/data cost files that sim/CMakeLists.txt lists, by the
  // name it gives it ("h200", the workloads' default, is the shipped kernel on the H200). Throws
  // std::invalid_argument naming the built-in profiles for any other name.
  static CostModel builtin(const std::string& profile);
  // The names builtin() knows, in the order sim/CMakeLists.txt lists them.
  static std::vector<std::string> builtin_names();
  // A cost file (format in docs/sim-cost-model.md). Throws std::invalid_argument naming the file
  // and the field at fault, std::runtime_error when it cannot be read.
  static CostModel load(const std::string& path);
  static CostModel from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;

  // Least-squares fit (one entry per head_dim found in the traces) from measured tile times:
  // fit_cost on the traces that ran one CTA per SM, fit_sharing for each head_dim whose traces
  // show CTAs sharing an SM (one CTA per SM elsewhere), and fit_cta_launch for each head_dim with
  // a transient trace that refilled its slots (no launch time elsewhere). A head_dim whose traces
  // ran several tile heights gets its entry from the smallest and a by_tile_height entry for each
  // other; sharing and launch come from the smallest height's traces. The traces must count KV
  // blocks of one size (their workloads' block_n), which the model records; traces of several
  // sizes throw std::invalid_argument naming them. The coefficients come from the contiguous
  // traces; the paged ones (page_size != 0) fit paged_by_head_dim against them
  // (fit_paged_factor); paged traces of a head_dim without contiguous ones throw. Decode tiles and
  // pieces of split tiles fit the HBM bandwidth and saved_row_us_by_head_dim against them
  // (fit_streams); a bandwidth no decode tile ran past stays the default.
  static CostModel fit(const std::vector<Trace>& traces, const std::string& device);
};

// The one block_n of `traces`' workloads; std::invalid_argument ("the traces count KV blocks of
// different sizes: BN 64 (a.json) and BN 128 (b.json)", naming the first trace of each, by
// `names` where given, else by index) when they differ, or when there are none.
u32 traces_block_n(const std::vector<Trace>& traces, const std::vector<std::string>& names = {});

// The bytes of K and V the tile or piece of event `e` streams from HBM: its keys' bf16 K and V
// (past the sequence's end none) when it is a decode tile (a decoding workload's sequence of at
// most kMaxDecodeTokens new tokens), 0 otherwise. A decode tile reads its (sequence, KV head)'s
// cache once, by itself or with the tile's other pieces, so no cache serves it from the L2; a
// prefill tile reads its K and V blocks many times over, through the L2.
double stream_bytes(const Workload& w, const TraceEvent& e);

// The query rows the tile of event `e` writes for all the query heads it computes: its
// query_rows times the heads of its tile (a decode tile's group, SPEC §6; one head in prefill).
// A piece of a split tile saves their partial state.
u32 tile_output_rows(const Workload& w, const TraceEvent& e);

// The KV-block counts of a trace event, recomputed from its workload (SPEC §7). A faithful-mode
// tile at or past its sequence's end counts every key of its sequence, as upstream would process
// them, whether it writes BM rows (past the end) or none (starting exactly at the end). A piece of
// a tile (split_tail) counts the blocks it processed.
TileCost event_tile_cost(const Workload& w, const TraceEvent& e);
// The whole tile's, whatever part of it the event processed (split_tail's pieces: their
// kv_block_begin and kv_blocks say which blocks).
TileCost whole_tile_cost(const Workload& w, const TraceEvent& e);
// Whether an event processed only part of its tile's blocks (`whole`): a split_tail piece.
inline bool processes_part(const TraceEvent& e, const TileCost& whole) {
  return e.kv_block_begin != 0 || e.kv_blocks < whole.kv_blocks;
}

// Result of fitting one head_dim.
struct CostFit {
  CostCoefficients coefficients;
  double rms_residual_us = 0;  // root mean square of (measured - predicted)
  // rms_residual_us / root mean square of the measured tile times: the typical error of one
  // predicted tile time as a fraction of a typical tile time (0 = exact).
  double relative_rms_error = 0;
  std::size_t samples = 0;
  // The mean gap between a CTA's consecutive tiles (the next tile's start minus this one's end:
  // the hand-off, which no event's own time holds), included in coefficients.fixed_us; 0 when no
  // CTA ran two tiles (transient grids).
  double handoff_us = 0;
  std::size_t handoff_samples = 0;  // consecutive tile pairs it was measured on
};

// Fits fixed_us, us_per_block and us_per_masked_block for `head_dim` by least squares over every
// whole tile (end_us - start_us) of the contiguous prefill traces (page_size 0: a paged cache's
// cost is fit_paged_factor's; not decoding: decode tiles stream, and fit_streams fits them and
// the pieces of split tiles) whose workload has that head_dim and that ran one CTA per SM
// (max_busy_per_sm == 1): a tile that shared its SM took longer than its cost. The replay runs a
// CTA's tiles back to back, so fixed_us then gets the mean gap between a CTA's consecutive tiles in
// those traces added (CostFit::handoff_us). Throws std::invalid_argument when there are fewer than
// 3 samples (naming the traces skipped for sharing their SMs) or the counts do not determine the
// three coefficients; the message names the coefficient left open (e.g. us_per_masked_block when no
// tile has masked blocks). Coefficients are returned as fitted, negative ones included: the caller
// decides whether a negative cost is acceptable. `block_m` > 0 restricts the fit to the traces
// whose workload has that tile height (0: every height, which mixes the costs of different tiles
// when a head_dim ran several).
CostFit fit_cost(const std::vector<Trace>& traces, u32 head_dim, u32 block_m = 0);

// Result of fitting the paged factor of one head_dim and box count.
struct PagedFit {
  double factor = 1;
  double rms_residual_us = 0;     // RMS of (measured - predicted) tile time, hand-off included
  double relative_rms_error = 0;  // rms_residual_us / RMS of the measured tile times
  std::size_t samples = 0;
  std::size_t traces = 0;
  // The mean gap between a CTA's consecutive tiles in these traces, added to each measured tile
  // (the model's fixed_us holds the hand-off, CostFit::handoff_us); 0 when no CTA ran two tiles.
  double handoff_us = 0;
};

// Fits paged_by_head_dim[head_dim][boxes] by least squares over every event of the paged traces
// (page_size != 0) of that head_dim whose blocks load as `boxes` TMA boxes and that ran one CTA
// per SM, with the other coefficients held at `contiguous`'s (coefficients(w) of the trace's
// workload without pages: its BM, scheduler and BN): per tile, measured time + hand-off -
// fixed_us = factor * (us_per_block * unmasked + us_per_masked_block * masked), so factor =
// sum(x * y) / sum(x * x) over the tiles. Throws std::invalid_argument when no such tile
// exists or none has a KV block. The factor is returned as fitted, outside the range a cost file
// holds included.
PagedFit fit_paged_factor(const std::vector<Trace>& traces, u32 head_dim, u32 boxes,
                          const CostModel& contiguous);

// Tiles of one kind that fit_streams looked at: their measured time against the model's (summed
// over the tiles, hand-off included), what was fitted in it.
struct StreamGroup {
  bool decode = false;  // decode tiles (they stream); else prefill tiles of a decoding workload,
                        // or pieces of split prefill tiles (they read through the L2)
  enum Part { Whole, FirstPiece, LaterPiece } part = Whole;
  // A decode tile: its streams asked more than the fitted bandwidth. Any other: decode tiles
  // streamed beside it.
  bool pressed = false;
  std::size_t tiles = 0;
  double blocks = 0, measured_us = 0, modelled_us = 0;
  double asked = 0;  // bytes per µs the streaming tiles asked while it ran, summed over the tiles
};

// Result of fitting what decode tiles' streams and pieces' saves take beyond the tile costs.
struct StreamFit {
  // The HBM bandwidth the streaming decode tiles shared, bytes per µs, as fitted (outside what a
  // cost file holds included); 0 when none of them ran past it (the traces cannot tell it).
  double hbm_bytes_per_us = 0;
  std::size_t bound_tiles = 0;      // decode tiles and pieces whose streams asked more than it
  std::size_t decode_tiles = 0;     // decode tiles and pieces of the traces
  std::size_t decoding_traces = 0;  // traces with decode tiles
  // us_per_saved_row of each head dim whose traces have pieces of split tiles, as fitted, and
  // how many pieces it came from.
  std::map<u32, double> saved_row_us;
  std::map<u32, std::size_t> pieces;
  std::size_t samples = 0;        // tiles of the least-squares problem
  double rms_residual_us = 0;     // RMS of (measured - modelled) time over them
  double relative_rms_error = 0;  // rms_residual_us / RMS of their measured times
  std::size_t iterations = 0;     // rounds until no tile changed sides
  // Every decode tile, piece and prefill tile of a decoding workload of the traces, by kind, the
  // model as fitted (ordered: prefill before decode, whole before pieces).
  std::vector<StreamGroup> groups;
};

// Fits the HBM bandwidth (CostModel::hbm_bytes_per_us) and each head dim's us_per_saved_row by
// least squares over the traces that ran one CTA per SM, against the tile costs of `tiles`
// (coefficients(w) of each trace's workload; its fixed_us holds a hand-off, so each measured
// tile has its trace's mean hand-off added, as fit_cost does). The replay's model of a tile,
// applied to what the trace measured:
// - a decode tile or piece (stream_bytes > 0) runs its fixed part (fixed_us, and a piece's save),
//   then streams its blocks; its solo demand is its stream bytes over its blocks' cost. `asked`
//   is the mean, over its streaming part, of the demands of the trace's tiles streaming then.
//   When asked exceeds the bandwidth: time - fixed_us = blocks' cost x asked / bandwidth +
//   us_per_saved_row x rows (for a piece);
// - any other piece (of a prefill tile, or a decode piece that streamed within the bandwidth):
//   time - its tile cost = us_per_saved_row x rows (rows: tile_output_rows).
// Which tiles ran past the bandwidth depends on it: the fit starts at `start_hbm_bytes_per_us`
// and repeats until no tile changes sides (at most 50 rounds). Throws std::invalid_argument when
// the traces have no such tile. A bandwidth no tile ran past stays 0; a head dim without pieces
// gets no us_per_saved_row.
StreamFit fit_streams(const std::vector<Trace>& traces, const CostModel& tiles,
                      double start_hbm_bytes_per_us);

// Whether `traces` hold a tile fit_streams fits: a decode tile (stream_bytes > 0) or a piece of a
// split tile, in a trace that ran one CTA per SM.
bool has_streams_or_pieces(const std::vector<Trace>& traces);
// The same of one trace.
bool has_streams_or_pieces(const Trace& t);

// The (head_dim, boxes) pairs of the paged traces of `traces`, in ascending order.
std::vector<std::pair<u32, u32>> paged_groups(const std::vector<Trace>& traces);

// For each event of `t` (same order), the time it spent while k CTAs were busy on its SM, at
// index k - 1 (so the entries sum to the event's duration). SMs are the events' sm_id; an event
// without one (sm_id < 0, a simulated persistent trace of an older version) counts as alone.
std::vector<std::vector<double>> time_by_busy_ctas(const Trace& t);

// The most CTAs busy at the same time on one SM of the trace (0 for no events).
u32 max_busy_per_sm(const Trace& t);

// Result of fitting how a head_dim's CTAs share an SM.
struct SharingFit {
  SmSharing sharing;              // ctas_per_sm = the most CTAs seen busy on one SM
  double rms_residual_us = 0;     // RMS of (solo cost - time-weighted progress) over shared tiles
  double relative_rms_error = 0;  // rms_residual_us / RMS of those tiles' solo costs
  std::size_t samples = 0;        // tiles that shared their SM for part of their time
};

// Fits rate(2) .. rate(K) for `head_dim` (K = the most CTAs seen busy on one SM) by least squares:
// a tile whose solo cost is `solo.tile_time_us` and that spent a_k µs with k CTAs busy on its SM
// made progress a_1 + rate(2) a_2 + ... + rate(K) a_K = its solo cost. Throws
// std::invalid_argument saying why when the traces cannot determine the rates: no tile of that
// head_dim ever shared its SM (traces at one CTA per SM only), or too few tiles at some sharing
// level to tell the rates apart. Rates are returned as fitted, outside (0, 1] included.
// `block_m` > 0: only the traces of that tile height (as for fit_cost).
SharingFit fit_sharing(const std::vector<Trace>& traces, u32 head_dim, const CostCoefficients& solo,
                       u32 block_m = 0);

// Result of fitting how long a CTA takes to start in a freed slot.
struct LaunchFit {
  double cta_launch_us = 0;
  std::size_t traces = 0;    // transient traces it came from
  std::size_t refills = 0;   // tiles that started in a slot another CTA had freed
  std::size_t tileless = 0;  // CTAs without a tile launched between them (no event of their own)
  double rms_spread_us = 0;  // RMS over those traces of (their own estimate - cta_launch_us)
};

// Fits cta_launch_us for `head_dim` from its transient traces that ran one CTA per SM, against
// the tile costs `solo`. On each SM the tiles of a transient grid run one after another; the SM's
// span (first tile's start to last tile's end) holds their costs and one launch per refill: every
// tile after the SM's first, and every CTA without a tile that started in a freed slot (counted as
// the CTAs of no event, past the first wave, below the last CTA id with a tile: the H200 starts
// CTAs in id order). The fit is the least-squares launch over all traces: the sum of the spans
// minus the costs, over the number of launches. Throws std::invalid_argument when no transient
// trace of that head_dim ran one CTA per SM with more CTAs than slots. The launch is returned as
// fitted, negative included (the tile costs then exceed the measured tiles).
// `block_m` > 0: only the traces of that tile height (as for fit_cost).
LaunchFit fit_cta_launch(const std::vector<Trace>& traces, u32 head_dim,
                         const CostCoefficients& solo, u32 block_m = 0);

}  // namespace tilesched::sim
