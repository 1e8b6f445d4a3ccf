"""Text of the sample product manuals (English and Japanese), one list item per PDF page.

Kept apart from the PDF generator so the text can be read and reviewed as plain Python.
"""

TITLE_EN = "Kumo Pure 300 Air Purifier - User Manual"
TITLE_JA = "Kumo Pure 300 空気清浄機 取扱説明書"

PAGES_EN: list[tuple[str, list[str]]] = [
    ("1. Safety and overview", [
        "Thank you for choosing the Kumo Pure 300 air purifier. Read this manual before first use and keep it "
        "for future reference.",
        "The Kumo Pure 300 cleans rooms of up to 35 square metres. It uses a washable pre-filter, a true HEPA "
        "H13 filter and an activated carbon layer that removes odours.",
        "Do not use the purifier in bathrooms or other places with high humidity. Keep the air inlet and outlet "
        "at least 30 cm away from walls and curtains.",
        "Never insert fingers or objects into the air outlet. Unplug the purifier before cleaning it or "
        "replacing the filter.",
    ]),
    ("2. Setup and first use", [
        "Remove the purifier from the box and place it on a flat, stable floor.",
        "Open the rear cover and take the filter out of its plastic bag. The purifier will not start while the "
        "filter is still wrapped, and the display shows error E3.",
        "Put the filter back with the pull tab facing outwards, close the rear cover and plug in the power cord.",
        "Press the power button once. The ring light turns blue and the purifier starts in Auto mode.",
        "To connect the purifier to the Kumo Home app, hold the Wi-Fi button for 3 seconds until the Wi-Fi "
        "icon blinks, then follow the steps in the app. Only 2.4 GHz Wi-Fi networks are supported.",
    ]),
    ("3. Operating modes and controls", [
        "Auto mode adjusts the fan speed to the air quality measured by the PM2.5 sensor.",
        "Sleep mode runs the fan at its lowest speed and dims the display. The noise level in Sleep mode is "
        "22 dB.",
        "Turbo mode runs the fan at full speed for 30 minutes and then returns to Auto mode.",
        "The ring light shows the air quality: blue means good, yellow means moderate and red means poor.",
        "Child lock: hold the Lock button for 3 seconds to lock all buttons. Hold it for 3 seconds again to "
        "unlock them.",
        "The timer button switches the purifier off after 2, 4 or 8 hours.",
    ]),
    ("4. Filter care and maintenance", [
        "Clean the pre-filter every two weeks with a vacuum cleaner, or rinse it with water and let it dry "
        "completely before putting it back.",
        "Replace the HEPA filter every 12 months, or sooner when the filter indicator lights up red. The HEPA "
        "filter cannot be washed.",
        "After replacing the filter, hold the Filter button for 5 seconds to reset the filter indicator.",
        "Use only genuine Kumo replacement filters (part number KF-300). Other filters may not seal properly.",
        "Wipe the outside of the purifier with a soft dry cloth. Do not use solvents or detergents.",
    ]),
    ("5. Troubleshooting, specifications and warranty", [
        "Error E1 means the fan motor has stopped. Unplug the purifier, wait 10 minutes and plug it in again. "
        "If E1 appears again, contact Kumo support.",
        "Error E2 means the air quality sensor is dirty. Clean the sensor window on the side with a dry cotton "
        "swab.",
        "Error E3 means the filter is missing or not seated correctly.",
        "Specifications: rated power 45 W, clean air delivery rate 300 cubic metres per hour, weight 6.2 kg, "
        "size 27 x 27 x 60 cm.",
        "Warranty: the Kumo Pure 300 has a two-year warranty from the date of purchase. Register the product "
        "in the Kumo Home app within 30 days to extend the warranty by one year. Filters are consumables and "
        "are not covered by the warranty.",
    ]),
]

PAGES_JA: list[tuple[str, list[str]]] = [
    ("1. 安全上のご注意と概要", [
        "このたびは Kumo Pure 300 空気清浄機をお買い上げいただき、ありがとうございます。ご使用の前にこの説明書をお読みください。",
        "Kumo Pure 300 は、35平方メートルまでの部屋に対応しています。洗えるプレフィルター、HEPA H13 フィルター、脱臭用の活性炭層を備えています。",
        "浴室など湿気の多い場所では使用しないでください。吸気口と吹出口は、壁やカーテンから30cm以上離してください。",
        "お手入れやフィルター交換の前には、必ず電源プラグを抜いてください。",
    ]),
    ("2. 設置と初めてのご使用", [
        "本体を箱から取り出し、平らで安定した床の上に置いてください。",
        "背面カバーを開け、フィルターをビニール袋から取り出してください。フィルターが袋に入ったままだと運転できず、表示部にエラー E3 が表示されます。",
        "つまみが外側を向くようにフィルターを戻し、背面カバーを閉めて電源コードを差し込みます。",
        "電源ボタンを一度押すと、リングライトが青く点灯し、自動モードで運転を始めます。",
        "Kumo Home アプリと接続するには、Wi-Fi ボタンを3秒間長押しし、Wi-Fi アイコンが点滅したらアプリの手順に従ってください。対応しているのは2.4GHz帯の Wi-Fi のみです。",
    ]),
    ("3. 運転モードと操作", [
        "自動モードでは、PM2.5センサーが測定した空気の状態に合わせて風量を調整します。",
        "おやすみモードでは、最も弱い風量で運転し、表示部を暗くします。おやすみモードの運転音は22dBです。",
        "ターボモードは30分間最大風量で運転し、その後自動モードに戻ります。",
        "リングライトの色は空気の状態を示します。青はきれい、黄色はやや汚れ、赤は汚れを表します。",
        "チャイルドロック：ロックボタンを3秒間長押しすると、すべてのボタンが操作できなくなります。解除するには、もう一度3秒間長押ししてください。",
        "タイマーボタンで、2時間、4時間、8時間後に運転を停止できます。",
    ]),
    ("4. フィルターのお手入れ", [
        "プレフィルターは2週間に1回、掃除機でほこりを吸い取るか、水洗いしてよく乾かしてから取り付けてください。",
        "HEPAフィルターは12か月ごと、またはフィルターサインが赤く点灯したら交換してください。HEPAフィルターは水洗いできません。",
        "フィルター交換後は、フィルターボタンを5秒間長押ししてフィルターサインをリセットしてください。",
        "交換用フィルターは Kumo 純正品（品番 KF-300）をお使いください。",
        "本体の外側は、乾いたやわらかい布でふいてください。シンナーや洗剤は使わないでください。",
    ]),
    ("5. 故障かなと思ったら・仕様・保証", [
        "エラー E1 はファンモーターが停止したことを示します。電源プラグを抜いて10分待ち、もう一度差し込んでください。再び E1 が表示される場合は、Kumo サポートにご連絡ください。",
        "エラー E2 は空気センサーの汚れを示します。側面のセンサー窓を乾いた綿棒で掃除してください。",
        "エラー E3 はフィルターが入っていないか、正しく取り付けられていないことを示します。",
        "仕様：定格消費電力45W、適用床面積35平方メートル、質量6.2kg、外形寸法27×27×60cm。",
        "保証：Kumo Pure 300 の保証期間はお買い上げ日から2年間です。30日以内に Kumo Home アプリで製品登録すると、保証期間が1年延長されます。フィルターは消耗品のため保証の対象外です。",
    ]),
]
