// The tessel command-line tool: JSON on stdout; errors as one sentence on stderr with exit status
// 1, whatever found them (CLI11's parser, an option's value, a file, the library); --help exits 0.
#include <exception>
#include <iostream>
#include <regex>
#include <string>

#include <CLI/CLI.hpp>
#include <tessel/core/error.hpp>

#include "commands.hpp"

namespace {

// The exit status of every error (docs/flce.md, "The command line"); CLI11's own codes (106 for a
// missing option, 109 for an unexpected argument, ...) are not passed on.
constexpr int error_status = 1;

// "tessel plan split": the command whose options were being read, for the pointer to its --help.
std::string command_path(CLI::App const& app) {
  std::string path = app.get_name();
  CLI::App const* command = &app;
  while (!command->get_subcommands().empty()) {
    command = command->get_subcommands().front();
    path += " " + command->get_name();
  }
  return path;
}

// CLI11's message as one sentence that points to the command's help, its two cryptic forms
// reworded: "--split: 1 required TEXT missing" reads "--split needs a value; see tessel plan split
// --help.", "--target: At Most 1 required but received 2" reads "--target takes one value but was
// given 2; see ...".
std::string parse_error_sentence(CLI::App const& app, CLI::ParseError const& e) {
  std::string message = e.what();
  for (char& c : message)
    if (c == '\n') c = ' ';
  std::smatch m;
  if (std::regex_match(message, m, std::regex("(.+): 1 required [A-Z]+ missing")))
    message = m.str(1) + " needs a value";
  else if (std::regex_match(message, m, std::regex("(.+): At Most 1 required but received (\\d+)")))
    message = m.str(1) + " takes one value but was given " + m.str(2);
  while (!message.empty() && (message.back() == '.' || message.back() == ' ')) message.pop_back();
  return message + "; see " + command_path(app) + " --help.";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessel: compile-time layout plans and tensor operations from the command line."};
  app.name("tessel");
  app.require_subcommand(1);
  tessel::cli::add_plan_commands(app);
  tessel::cli::add_attention_commands(app);
  tessel::cli::add_flce_commands(app);
  tessel::cli::add_shampoo_commands(app);
  try {
    app.parse(argc, argv);
  } catch (CLI::CallForHelp const&) {
    std::cout << app.help();
    return 0;
  } catch (CLI::CallForAllHelp const&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (CLI::ParseError const& e) {
    std::cerr << "tessel: " << parse_error_sentence(app, e) << "\n";
    return error_status;
  } catch (tessel::Error const& e) {
    std::cerr << "tessel: " << e.what() << "\n";
    return error_status;
  } catch (std::exception const& e) {
    std::cerr << "tessel: " << e.what() << "\n";
    return error_status;
  }
  return 0;
}
