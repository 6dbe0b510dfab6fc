// samples/orders/main.cpp — factum-orders: an order lifecycle on factum (see TOUR.md).
#include <iostream>

#include "orders/commands.hpp"

int main(int argc, char** argv) { return orders::run_cli(argc, argv, std::cout, std::cerr); }
