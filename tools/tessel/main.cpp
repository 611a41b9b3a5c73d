// The tessel command-line tool: JSON on stdout; errors as one sentence on stderr with a non-zero
// exit status.
#include <exception>
#include <iostream>

#include <CLI/CLI.hpp>
#include <tessel/core/error.hpp>

#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tessel: compile-time layout plans and tensor operations from the command line."};
  app.name("tessel");
  app.require_subcommand(1);
  tessel::cli::add_plan_commands(app);
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
    std::cerr << "tessel: " << e.what() << " (see tessel --help)\n";
    return e.get_exit_code() != 0 ? e.get_exit_code() : 2;
  } catch (tessel::Error const& e) {
    std::cerr << "tessel: " << e.what() << "\n";
    return 1;
  } catch (std::exception const& e) {
    std::cerr << "tessel: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
