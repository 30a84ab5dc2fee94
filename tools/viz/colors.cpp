#include "viz/colors.hpp"

#include <fmt/format.h>

#include <cmath>

namespace tilesched::viz {

const char* category_name(ColorBy by) {
  return by == ColorBy::Batch ? "prompt" : "head";
}

u32 color_key(const TraceEvent& e, ColorBy by) {
  return by == ColorBy::Batch ? e.prompt_idx : e.head_idx;
}

namespace {

Rgb hsl_to_rgb(double hue_deg, double saturation, double lightness) {
  const double c = (1.0 - std::fabs(2.0 * lightness - 1.0)) * saturation;
  const double h = std::fmod(hue_deg, 360.0) / 60.0;
  const double x = c * (1.0 - std::fabs(std::fmod(h, 2.0) - 1.0));
  double r = 0, g = 0, b = 0;
  if (h < 1)
    r = c, g = x;
  else if (h < 2)
    r = x, g = c;
  else if (h < 3)
    g = c, b = x;
  else if (h < 4)
    g = x, b = c;
  else if (h < 5)
    r = x, b = c;
  else
    r = c, b = x;
  const double m = lightness - c / 2.0;
  auto byte = [&](double v) { return static_cast<std::uint8_t>(std::lround((v + m) * 255.0)); };
  return Rgb{byte(r), byte(g), byte(b)};
}

}  // namespace

Rgb category_color(u32 key) {
  // The golden angle spreads any number of hues without a fixed palette running out; the
  // lightness alternates per turn of the wheel so keys that land on similar hues still differ.
  constexpr double kGoldenAngle = 137.50776405;
  const double hue = std::fmod(key * kGoldenAngle + 210.0, 360.0);
  const int turn = static_cast<int>((key * kGoldenAngle) / 360.0);
  const double lightness = (turn % 3 == 0) ? 0.55 : (turn % 3 == 1 ? 0.42 : 0.68);
  return hsl_to_rgb(hue, 0.62, lightness);
}

std::string to_hex(Rgb c) {
  return fmt::format("#{:02x}{:02x}{:02x}", c.r, c.g, c.b);
}

int to_ansi256(Rgb c) {
  auto level = [](std::uint8_t v) {
    // The cube's levels are 0, 95, 135, 175, 215, 255.
    if (v < 48) return 0;
    if (v < 115) return 1;
    return (v - 35) / 40;
  };
  return 16 + 36 * level(c.r) + 6 * level(c.g) + level(c.b);
}

bool is_dark(Rgb c) {
  return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b < 140.0;
}

char category_symbol(u32 key) {
  static constexpr char kSymbols[] =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  return kSymbols[key % (sizeof(kSymbols) - 1)];
}

}  // namespace tilesched::viz
