// A small line plot written as standalone SVG text: axes with ticks, one
// polyline per series, a legend and an optional marked point. Enough to show
// `feedline tune`'s images/s against workers without a plotting library.
//
// Thread safety: pure functions.
#ifndef FEEDLINE_TOOLS_SVG_PLOT_H_
#define FEEDLINE_TOOLS_SVG_PLOT_H_

#include <optional>
#include <string>
#include <vector>

namespace feedline::cli {

struct PlotSeries {
  std::string label;
  std::vector<double> x;
  std::vector<double> y;  // same length as x
};

struct PlotMarker {
  double x = 0;
  double y = 0;
  std::string label;
};

struct LinePlot {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<PlotSeries> series;
  std::optional<PlotMarker> marker;
  // Ticks on the x axis at whole numbers only (counts such as workers).
  bool integer_x = false;
  int width = 640;
  int height = 400;
};

// The plot as an SVG document. Axes start at 0 and end at a round value
// above the largest point. Throws Error if a series' x and y differ in length.
std::string RenderSvg(const LinePlot& plot);

// Round tick spacing (1, 2 or 5 times a power of ten) that splits [0, max]
// into about `target` intervals; 1 when max <= 0.
double NiceTickStep(double max, int target);

// `text` with &, <, >, " escaped for XML.
std::string EscapeXml(const std::string& text);

}  // namespace feedline::cli

#endif  // FEEDLINE_TOOLS_SVG_PLOT_H_
