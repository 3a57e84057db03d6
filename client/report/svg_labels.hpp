#pragma once
// Text placement for the SVG chart: every label's box is estimated from its length and font
// size, and a label goes to the first candidate position whose box overlaps no label placed
// before it, or is left out. The estimate is generous (0.6 em per character), so labels that
// pass here do not touch in a renderer.

#include <string_view>
#include <vector>

#include "report/format.hpp"

namespace ramguard::report {

struct TextBox {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool overlaps(const TextBox& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

enum class Anchor { kStart, kMiddle, kEnd };

// The box of `text` drawn at baseline (x, y).
inline TextBox text_box(double x, double y, std::string_view text, double font_size,
                        Anchor anchor) {
  const double width = 0.6 * font_size * static_cast<double>(display_width(text));
  const double x0 = anchor == Anchor::kStart    ? x
                    : anchor == Anchor::kMiddle ? x - width / 2
                                                : x - width;
  // 2 px on each side, so neighbours such as R10 R11 keep a visible gap.
  return {x0 - 2, y - font_size * 0.8, x0 + width + 2, y + font_size * 0.25};
}

class LabelPlacer {
 public:
  bool fits(const TextBox& box) const {
    for (const TextBox& placed : placed_) {
      if (placed.overlaps(box)) return false;
    }
    return true;
  }
  // Reserves the box when it fits; false (nothing reserved) when it does not.
  bool place(const TextBox& box) {
    if (!fits(box)) return false;
    placed_.push_back(box);
    return true;
  }
  void reserve(const TextBox& box) { placed_.push_back(box); }

 private:
  std::vector<TextBox> placed_;
};

}  // namespace ramguard::report
