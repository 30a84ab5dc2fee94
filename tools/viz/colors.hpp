// One colour per category (a head or a sequence), shared by the terminal view and the SVG chart
// so the same head has the same colour everywhere.
#pragma once

#include <cstdint>
#include <string>

#include "tilesched/names.hpp"
#include "tilesched/trace.hpp"

namespace tilesched::viz {

// What a tile's colour stands for.
enum class ColorBy { Head, Batch };

inline constexpr EnumName<ColorBy> kColorByNames[] = {
    {ColorBy::Head, "head"},
    {ColorBy::Batch, "batch"},
};
constexpr const auto& enum_names(ColorBy) {
  return kColorByNames;
}

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
};

// What one category is called in legends: "head", or "prompt" for a sequence.
const char* category_name(ColorBy by);

// The category a tile belongs to under `by`.
u32 color_key(const TraceEvent& e, ColorBy by);

// A colour for category `key`. Consecutive keys get clearly different hues (golden-angle steps)
// because neighbouring heads usually sit next to each other in a schedule.
Rgb category_color(u32 key);

std::string to_hex(Rgb c);  // "#rrggbb"
int to_ansi256(Rgb c);      // nearest entry of the xterm 6x6x6 colour cube
bool is_dark(Rgb c);        // whether white text reads better than black on it

// A one-character label for a category: 0-9, a-z, A-Z, then it wraps (key mod 62).
char category_symbol(u32 key);

}  // namespace tilesched::viz
