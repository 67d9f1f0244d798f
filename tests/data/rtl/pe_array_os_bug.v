// The planted bug: pe_array_os.v with PLANTED_BUG = 1 (its last output lane forgets the old
// output-buffer value when a tile accumulates). `archsim rtl cosim --verilog pe_array_os.v
// pe_array_os_bug.v --top pe_array_os_bug` must fail on the first accumulating tile with an
// output in the last lane.
`default_nettype none

module pe_array_os_bug (
    input  wire clk,
    input  wire rst,
    input  wire [42:0] cmd__payload,
    input  wire cmd__valid,
    output wire cmd__ready,
    input  wire [71:0] wr__payload,
    input  wire wr__valid,
    output wire wr__ready,
    input  wire [5:0] rd_addr__payload,
    input  wire rd_addr__valid,
    output wire rd_addr__ready,
    output wire [63:0] rd_data__payload,
    output wire rd_data__valid,
    input  wire rd_data__ready,
    output wire busy,
    output wire done,
    output wire [31:0] tile_cycles,
    output wire [31:0] tiles_done,
    output wire error
);
    pe_array_os #(.PLANTED_BUG(1)) array (
        .clk(clk), .rst(rst),
        .cmd__payload(cmd__payload), .cmd__valid(cmd__valid), .cmd__ready(cmd__ready),
        .wr__payload(wr__payload), .wr__valid(wr__valid), .wr__ready(wr__ready),
        .rd_addr__payload(rd_addr__payload), .rd_addr__valid(rd_addr__valid), .rd_addr__ready(rd_addr__ready),
        .rd_data__payload(rd_data__payload), .rd_data__valid(rd_data__valid), .rd_data__ready(rd_data__ready),
        .busy(busy), .done(done), .tile_cycles(tile_cycles), .tiles_done(tiles_done), .error(error)
    );
endmodule

`default_nettype wire
