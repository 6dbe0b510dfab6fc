// samples/orders/main.cpp — factum-orders: an order lifecycle on factum (see TOUR.md).
#include <iostream>

#include "checked_stdout.hpp"
#include "orders/commands.hpp"

int main(int argc, char** argv) {
  factum::samples::CheckedStdout out;  // what is printed must reach stdout, or exit 1
  const int code = orders::run_cli(argc, argv, std::cout, std::cerr);
  if (code != 0) return code;  // a failure has said its one line already
  return out.finish("factum-orders", code, std::cerr);
}
