// SPDX-License-Identifier: Apache-2.0
#include "report_page.hpp"

#include <cmath>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "dlx/common/error.hpp"

// The embedded files (cmake/DlxEmbedFile.cmake).
extern const std::string_view kReportPageHtml;
extern const std::string_view kReportPageCss;
extern const std::string_view kReportJsCommon;
extern const std::string_view kReportJsCurves;
extern const std::string_view kReportJsTable;
extern const std::string_view kReportJsHparams;
extern const std::string_view kReportJsStory;
extern const std::string_view kReportJsResources;
extern const std::string_view kReportJsTrials;
extern const std::string_view kReportChartJs;

namespace dlx::cli::report {
namespace {

// Replaces the one `marker` of `page` by `text`.
void fill(std::string& page, std::string_view marker, std::string_view text) {
  const auto at = page.find(marker);
  if (at == std::string::npos) throw Error(fmt::format("report template has no {} (a dlx bug)", marker));
  page.replace(at, marker.size(), text);
}

// A script's text must not hold "</script" (it would end the element early).
std::string_view script_text(std::string_view text, const char* what) {
  for (std::size_t at = text.find("</"); at != std::string_view::npos; at = text.find("</", at + 1)) {
    std::string lower;
    for (const char c : text.substr(at + 2, 6)) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    if (lower == "script") throw Error(fmt::format("{} holds </script> and cannot be inlined (a dlx bug)", what));
  }
  return text;
}

// The page's script: its parts in order (page_common.js defines what the others use).
std::string page_script() {
  std::string script;
  const std::pair<std::string_view, const char*> parts[] = {
      {kReportJsCommon, "page_common.js"}, {kReportJsCurves, "page_curves.js"}, {kReportJsTable, "page_table.js"},
      {kReportJsHparams, "page_hparams.js"}, {kReportJsStory, "page_story.js"},
      {kReportJsResources, "page_resources.js"}, {kReportJsTrials, "page_trials.js"}};
  for (const auto& [text, name] : parts) {
    script += script_text(text, name);
    script += '\n';
  }
  return script;
}

}  // namespace

std::string inline_json(const nlohmann::json& model) {
  const auto text = model.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  for (const char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_page(const nlohmann::json& model, std::optional<double> refresh_seconds) {
  std::string page(kReportPageHtml);
  fill(page, "<!--DLX_REFRESH-->",
       refresh_seconds ? fmt::format("<meta http-equiv=\"refresh\" content=\"{}\">",
                                     static_cast<long>(std::ceil(*refresh_seconds)))
                       : std::string());
  // Markers are filled in page order, each searched after the previous fill: no inlined text is
  // ever searched for a marker.
  const auto fill_after = [&page](std::size_t& from, std::string_view marker, std::string_view text) {
    const auto at = page.find(marker, from);
    if (at == std::string::npos) throw Error(fmt::format("report template has no {} (a dlx bug)", marker));
    page.replace(at, marker.size(), text);
    from = at + text.size();
  };
  std::size_t from = 0;
  fill_after(from, "/*DLX_STYLE*/", kReportPageCss);
  fill_after(from, "/*DLX_CHART_JS*/", script_text(kReportChartJs, "chart.min.js"));
  fill_after(from, "DLX_DATA_JSON", inline_json(model));
  fill_after(from, "/*DLX_PAGE_JS*/", page_script());
  return page;
}

}  // namespace dlx::cli::report
