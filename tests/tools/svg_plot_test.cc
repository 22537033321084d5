#include "tools/svg_plot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "feedline/error.h"

namespace feedline::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

LinePlot TwoSeries() {
  LinePlot plot;
  plot.title = "images/s <by> workers & prefetch";
  plot.x_label = "workers";
  plot.y_label = "images/s";
  plot.series = {{"prefetch 1", {1, 2, 3, 4}, {100, 190, 260, 280}},
                 {"prefetch 2", {1, 2, 3, 4}, {110, 200, 270, 300}}};
  plot.marker = PlotMarker{3, 270, "recommended"};
  return plot;
}

TEST(NiceTickStep, RoundSteps) {
  EXPECT_DOUBLE_EQ(NiceTickStep(300, 5), 100);
  EXPECT_DOUBLE_EQ(NiceTickStep(4, 8), 0.5);
  EXPECT_DOUBLE_EQ(NiceTickStep(32, 8), 5);
  EXPECT_DOUBLE_EQ(NiceTickStep(1234, 5), 500);
  EXPECT_DOUBLE_EQ(NiceTickStep(0, 5), 1);
}

TEST(EscapeXml, SpecialCharacters) {
  EXPECT_EQ(EscapeXml("a<b>&\"c\""), "a&lt;b&gt;&amp;&quot;c&quot;");
  EXPECT_EQ(EscapeXml("plain"), "plain");
}

TEST(RenderSvg, OnePolylinePerSeriesWithEveryPoint) {
  const std::string svg = RenderSvg(TwoSeries());
  EXPECT_THAT(svg, StartsWith("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, HasSubstr("</svg>\n"));
  EXPECT_EQ(Count(svg, "<polyline"), 2);
  // 8 data points plus the marker's ring.
  EXPECT_EQ(Count(svg, "<circle"), 9);
  EXPECT_THAT(svg, HasSubstr(">prefetch 1</text>"));
  EXPECT_THAT(svg, HasSubstr(">prefetch 2</text>"));
  EXPECT_THAT(svg, HasSubstr(">recommended</text>"));
  EXPECT_THAT(svg, HasSubstr("images/s &lt;by&gt; workers &amp; prefetch"));
}

TEST(RenderSvg, PointsLieInsideTheImage) {
  LinePlot plot = TwoSeries();
  const std::string svg = RenderSvg(plot);
  const std::regex circle("<circle cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"");
  int seen = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator();
       ++it) {
    const double x = std::stod((*it)[1]), y = std::stod((*it)[2]);
    EXPECT_GT(x, 0);
    EXPECT_LT(x, plot.width);
    EXPECT_GT(y, 0);
    EXPECT_LT(y, plot.height);
    ++seen;
  }
  EXPECT_EQ(seen, 9);
}

TEST(RenderSvg, HigherValuesAreDrawnHigher) {
  LinePlot plot;
  plot.series = {{"s", {1, 2}, {10, 20}}};
  const std::string svg = RenderSvg(plot);
  const std::regex circle("<circle cx=\"([0-9.]+)\" cy=\"([0-9.]+)\"");
  std::vector<std::pair<double, double>> points;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator();
       ++it) {
    points.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  }
  ASSERT_EQ(points.size(), 2u);
  EXPECT_LT(points[0].first, points[1].first);    // x grows to the right
  EXPECT_GT(points[0].second, points[1].second);  // y grows upwards
}

TEST(RenderSvg, IntegerTicks) {
  LinePlot plot;
  plot.series = {{"s", {1, 2, 3, 4}, {1, 2, 3, 4}}};
  EXPECT_THAT(RenderSvg(plot), HasSubstr(">0.5</text>"));
  plot.integer_x = true;
  EXPECT_THAT(RenderSvg(plot), ::testing::Not(HasSubstr(">0.5</text>")));
  EXPECT_THAT(RenderSvg(plot), HasSubstr(">3</text>"));
}

TEST(RenderSvg, MarkerLabelStaysInside) {
  LinePlot plot;
  plot.series = {{"s", {1, 2, 3, 4}, {1, 2, 3, 4}}};
  plot.marker = PlotMarker{4, 4, "here"};
  EXPECT_THAT(RenderSvg(plot), HasSubstr("text-anchor=\"end\" fill=\"#D55E00\">here</text>"));
  plot.marker = PlotMarker{1, 1, "here"};
  EXPECT_THAT(RenderSvg(plot), HasSubstr("text-anchor=\"start\" fill=\"#D55E00\">here</text>"));
}

TEST(RenderSvg, MismatchedSeriesIsAnError) {
  LinePlot plot;
  plot.series = {{"bad", {1, 2, 3}, {1, 2}}};
  EXPECT_THROW(RenderSvg(plot), Error);
}

TEST(RenderSvg, EmptyPlotStillRenders) {
  const std::string svg = RenderSvg(LinePlot{});
  EXPECT_THAT(svg, StartsWith("<svg"));
  EXPECT_EQ(Count(svg, "<polyline"), 0);
}

}  // namespace
}  // namespace feedline::cli
