// SPDX-License-Identifier: Apache-2.0
#pragma once
// The report's one HTML file: the page template (assets/page.html) with its styles, its script,
// the charting library (Chart.js, Debian's libjs-chart.js, embedded at build time) and the data
// model (report_model.hpp) inlined. Nothing is fetched: the file works copied to a laptop.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace dlx::cli::report {

// The data as it goes inside <script type="application/json">: JSON with every '<' written
// \u003c, so that no name or value (user text: trial names, hyperparameters, stop reasons) can
// close the script element or open a comment; bytes that are not UTF-8 become U+FFFD. The page
// parses it with JSON.parse and puts text on the page only as text nodes, never as HTML.
std::string inline_json(const nlohmann::json& model);

// The whole page. `refresh_seconds`: the page reloads itself every so often (dlx report --watch).
std::string render_page(const nlohmann::json& model, std::optional<double> refresh_seconds);

}  // namespace dlx::cli::report
